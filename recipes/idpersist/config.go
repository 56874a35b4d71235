package idpersist

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zkflow/zkflow/task"
)

// Config names the nodes of one persisted sequence and how far ahead the
// leader reserves.
type Config struct {
	// Sequence is the sequence node (seqid's format: an 8-byte big-endian
	// long, the largest ID reserved so far).
	Sequence string
	// Limit is the reserved-limit node, same format, followed by the
	// czxid of the sequence node it bounds (8 bytes): generators never
	// take an ID above it, nor from a sequence node it does not bound (one
	// deleted and created again), and the leader makes every value it
	// writes there durable in Store first.
	Limit string
	// Election is the parent of the leader candidates.
	Election string
	// Store is the durable high-water mark, shared by every replica (the
	// leader only; generators do not use it).
	Store Store
	// Parent, when set, makes the leader serve every child of Parent as a
	// sequence, picking up children added or removed while it runs
	// (Sequence, Limit and Store are then left empty). The limit of
	// Parent/<name> is Limits/<name>, and its mark is Stores' mark of
	// name. Generators use Named(name).
	Parent string
	// Limits is the parent of the limit nodes of the sequences under
	// Parent (required with Parent; not under Parent). A removed
	// sequence's limit node is kept, so that the name added again never
	// repeats an ID (PROTOCOL.md, Many sequences).
	Limits string
	// Stores keeps one durable mark per sequence name and the names of
	// the live sequences (required with Parent), shared by every replica.
	Stores Stores
	// Chunk is how far above the sequence's value the leader sets a new
	// limit (default 1000). One Store per Chunk IDs.
	Chunk int64
	// LowWater: the leader raises the limit once value + LowWater passes
	// it (default Chunk/2, at least 1), so generators rarely wait.
	LowWater int64
	// ACL gives, by path, the ACL of every node a replica creates: the
	// ancestors of the configured nodes, its candidate (the path sent:
	// Election/<token>), the limit nodes, Parent, and a sequence node
	// restored after a data loss. Nil means task.OpenACL. Generators
	// create no node.
	ACL task.ACLProvider
}

// ErrConfig: a Config that cannot work. It matches task.ErrInvalidArgument.
var ErrConfig = fmt.Errorf("%w: idpersist config", task.ErrInvalidArgument)

// Named returns the config of the sequence Parent/name, served by a leader
// with Parent set: Sequence is Parent/name and Limit is Limits/name. Use it
// with Reserve, Next and NewClient.
func (c Config) Named(name string) Config {
	c.Sequence, c.Limit = c.Parent+"/"+name, c.Limits+"/"+name
	c.Parent, c.Limits, c.Stores = "", "", nil
	return c
}

func (c Config) withDefaults(leader bool) (Config, error) {
	if c.Parent != "" {
		if !leader {
			return c, fmt.Errorf("%w: Parent is for the leader; generators use Named(name)", ErrConfig)
		}
		if !validPath(c.Parent) || !validPath(c.Limits) {
			return c, fmt.Errorf("%w: paths %q, %q", ErrConfig, c.Parent, c.Limits)
		}
		if c.Limits == c.Parent || strings.HasPrefix(c.Limits, c.Parent+"/") || strings.HasPrefix(c.Parent, c.Limits+"/") {
			return c, fmt.Errorf("%w: Limits %q and Parent %q overlap", ErrConfig, c.Limits, c.Parent)
		}
		if c.Sequence != "" || c.Limit != "" || c.Store != nil {
			return c, fmt.Errorf("%w: Sequence, Limit and Store must be empty with Parent", ErrConfig)
		}
		if c.Stores == nil {
			return c, fmt.Errorf("%w: nil Stores", ErrConfig)
		}
		return c.leaderDefaults()
	}
	for _, p := range []string{c.Sequence, c.Limit} {
		if !validPath(p) {
			return c, fmt.Errorf("%w: path %q", ErrConfig, p)
		}
	}
	if c.Sequence == c.Limit {
		return c, fmt.Errorf("%w: Sequence and Limit are the same node", ErrConfig)
	}
	if !leader {
		return c, nil
	}
	if !validPath(c.Election) {
		return c, fmt.Errorf("%w: path %q", ErrConfig, c.Election)
	}
	if c.Store == nil {
		return c, fmt.Errorf("%w: nil Store", ErrConfig)
	}
	return c.leaderDefaults()
}

func (c Config) leaderDefaults() (Config, error) {
	if !validPath(c.Election) {
		return c, fmt.Errorf("%w: path %q", ErrConfig, c.Election)
	}
	// The election's candidates must not be taken for a sequence or a
	// limit, nor the election's node be one.
	for _, p := range []string{c.Sequence, c.Limit, c.Parent, c.Limits} {
		if p != "" && (p == c.Election || strings.HasPrefix(p, c.Election+"/") || strings.HasPrefix(c.Election, p+"/")) {
			return c, fmt.Errorf("%w: Election %q and %q overlap", ErrConfig, c.Election, p)
		}
	}
	if c.Chunk == 0 {
		c.Chunk = 1000
	}
	if c.Chunk < 1 {
		return c, fmt.Errorf("%w: Chunk %d", ErrConfig, c.Chunk)
	}
	if c.LowWater == 0 {
		c.LowWater = max(c.Chunk/2, 1)
	}
	if c.LowWater < 1 || c.LowWater > c.Chunk {
		return c, fmt.Errorf("%w: LowWater %d not in [1, Chunk]", ErrConfig, c.LowWater)
	}
	return c, nil
}

func validPath(p string) bool {
	return len(p) > 1 && p[0] == '/' && !strings.HasSuffix(p, "/") && !strings.Contains(p, "//")
}

// ancestors of p, outermost first ("/a/b/c" -> "/a", "/a/b").
func ancestors(p string) []string {
	var out []string
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}

// Errors of the service.
var (
	// ErrDeposed: the leader's candidate node is gone (its write was fenced
	// off). The replica runs for election again.
	ErrDeposed = errors.New("idpersist: leadership lost")
	// errSuspended ends the leader's turn when the session is suspended.
	errSuspended = errors.New("idpersist: session suspended")
	// errRemoved ends the serving of a sequence under Parent whose node
	// was deleted.
	errRemoved = errors.New("idpersist: sequence removed")
)
