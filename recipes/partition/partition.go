package partition

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zkflow/zkflow/recipes"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Errors of the package, for errors.Is.
var (
	// ErrLeft is Member.Err after Leave.
	ErrLeft = errors.New("partition: member left")
	// ErrNotHeld is the error of a fenced write on an item the member
	// does not hold (never held, given up, or lost).
	ErrNotHeld = errors.New("partition: item not held")
	// ErrLost wraps the end of a hold the member did not choose: its lock
	// node deleted or changed by someone else, or its session ended.
	// It is recipes.ErrLost, the same value in every recipe.
	ErrLost = recipes.ErrLost
)

// DefaultStable is Config.Stable when it is zero.
const DefaultStable = time.Second

// Config describes one partitioned set. Path, Items and Identifier are
// required; the rest has defaults.
type Config struct {
	// Path is the partitioner's directory (kazoo's path): members join
	// Path/party, item locks live under Path/locks/<item>.
	Path string
	// Items is the set to divide; each item is one path component
	// (kazoo's str(item)). Duplicates are an error.
	Items []string
	// Stable is how long the party must stay unchanged before a member
	// takes or gives up items (kazoo's time_boundary). Zero: DefaultStable.
	Stable time.Duration
	// Assign returns the items member identifier should hold, given the
	// identifiers of the party (sorted, one per party node) and the sorted
	// items (a copy: it may keep or change it); what it returns that is not
	// an item of the set is ignored. Nil: KazooAssign, kazoo's default
	// partition function. Every
	// member of one set must use the same function, or two members wait
	// for each other's items (never both hold one: the locks decide).
	Assign func(identifier string, members, items []string) []string
	// Drain, if set, is the work to finish with an item before the member
	// gives it up, on a rebalance or a Leave (kazoo's RELEASE step, before
	// release_set): the member deletes the item's lock node once the
	// task has ended, whatever its outcome, and the item stays held (and
	// reported held) meanwhile. Writes made in it through Hold.Fenced are
	// still fenced. An item lost (its node gone, its session ended) is
	// not drained: it is no longer held. A Leave that comes while an item
	// drains stops that run and drains the item again. Nil: items are given
	// up at once.
	Drain func(h Hold) task.Task[task.Unit]
	// ACL gives the ACL of every node the member creates (nil:
	// task.OpenACL).
	ACL task.ACLProvider
}

// KazooAssign is kazoo's SetPartitioner default partition function: the
// sorted items i, i+n, i+2n, ... where i is the first index of identifier
// among the n sorted member identifiers (an identifier listed twice
// counts twice, as kazoo counts it). Nil if identifier is not a member.
func KazooAssign(identifier string, members, items []string) []string {
	i := slices.Index(members, identifier)
	if i < 0 {
		return nil
	}
	var out []string
	for ; i < len(items); i += len(members) {
		out = append(out, items[i])
	}
	return out
}

// Partitioner is one partitioned set: what New validated. It holds no
// state; one value may be shared by many members and executors.
type Partitioner struct {
	cfg   Config
	items []string // sorted
}

// New validates cfg. A bad path, item or duration fails with an error
// wrapping task.ErrInvalidPath or task.ErrInvalidArgument.
func New(cfg Config) (*Partitioner, error) {
	if err := task.ValidatePath(cfg.Path, false); err != nil {
		return nil, fmt.Errorf("partition: path %q: %w", cfg.Path, err)
	}
	if cfg.Path == "/" || cfg.Path == "/zookeeper" || strings.HasPrefix(cfg.Path, "/zookeeper/") {
		return nil, fmt.Errorf("partition: path %q: reserved: %w", cfg.Path, task.ErrInvalidPath)
	}
	if cfg.Stable < 0 {
		return nil, fmt.Errorf("partition: negative Stable %v: %w", cfg.Stable, task.ErrInvalidArgument)
	}
	if cfg.Stable == 0 {
		cfg.Stable = DefaultStable
	}
	if cfg.Assign == nil {
		cfg.Assign = KazooAssign
	}
	items := slices.Clone(cfg.Items)
	slices.Sort(items)
	for i, it := range items {
		if err := validName("item", it); err != nil {
			return nil, err
		}
		if i > 0 && items[i-1] == it {
			return nil, fmt.Errorf("partition: item %q listed twice: %w", it, task.ErrInvalidArgument)
		}
	}
	cfg.Items = items
	return &Partitioner{cfg: cfg, items: items}, nil
}

// Path is the partitioner's directory.
func (p *Partitioner) Path() string { return p.cfg.Path }

// Items is the set, sorted.
func (p *Partitioner) Items() []string { return slices.Clone(p.items) }

func (p *Partitioner) partyDir() string { return p.cfg.Path + "/party" }

// ItemDir is the directory of item's lock (kazoo's Lock path).
func (p *Partitioner) ItemDir(item string) string { return p.cfg.Path + "/locks/" + item }

// validName checks one path component.
func validName(what, s string) error {
	if s == "" || strings.Contains(s, "/") {
		return fmt.Errorf("partition: %s %q: %w", what, s, task.ErrInvalidPath)
	}
	if err := task.ValidatePath("/"+s, false); err != nil {
		return fmt.Errorf("partition: %s %q: %w", what, s, err)
	}
	return nil
}

// ValidateIdentifier checks a member identifier: it ends the member's
// party node's name (<32 hex digits>-<identifier>, kazoo's ShallowParty),
// so it must be one valid path component.
func ValidateIdentifier(id string) error { return validName("identifier", id) }

// hexID is a 128-bit id as 32 hex digits (kazoo's uuid4().hex), drawn
// from the executor's seeded source and mixed with the session's id
// (zkops.Draws), so never the same on two sessions.
func hexID(s *task.Scope) string {
	hi, lo := zkops.Draws(s)
	return fmt.Sprintf("%016x%016x", hi, lo)
}

// lockTag is kazoo's Lock node tag: <hex>__lock__<seq>.
const lockTag = "__lock__"

// partyMembers returns the identifiers of party node names (what follows
// the first "-", as kazoo's ShallowParty reads them), sorted.
func partyMembers(names []string) []string {
	var ids []string
	for _, n := range names {
		if i := strings.IndexByte(n, '-'); i >= 0 {
			ids = append(ids, n[i+1:])
		}
	}
	slices.Sort(ids)
	return ids
}
