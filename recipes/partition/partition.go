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

// DefaultStable is the wait of WithStable when it is not given.
const DefaultStable = time.Second

// config is what New was given, validated.
type config struct {
	Path   string
	Items  []string
	Stable time.Duration
	Assign func(identifier string, members, items []string) []string
	Drain  func(h Hold) task.Task[task.Unit]
	ACL    task.ACLProvider
}

// Option configures a Partitioner (New, NewClient).
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithStable sets how long the party must stay unchanged before a member
// takes or gives up items (kazoo's time_boundary). Zero: DefaultStable;
// negative: New fails with task.ErrInvalidArgument.
func WithStable(d time.Duration) Option { return optionFunc(func(c *config) { c.Stable = d }) }

// WithAssign sets the function that returns the items member identifier
// should hold, given the identifiers of the party (sorted, one per party
// node) and the sorted items (a copy: it may keep or change it); what it
// returns that is not an item of the set is ignored. Without it, or with
// fn nil: KazooAssign, kazoo's default partition function. Every member of
// one set must use the same function, or two members wait for each
// other's items (never both hold one: the locks decide).
func WithAssign(fn func(identifier string, members, items []string) []string) Option {
	return optionFunc(func(c *config) { c.Assign = fn })
}

// WithDrain sets the work to finish with an item before the member gives
// it up, on a rebalance or a Leave (kazoo's RELEASE step, before
// release_set): the member deletes the item's lock node once the task has
// ended, whatever its outcome, so that no other member holds the item
// meanwhile. On a rebalance the item stays held (and reported held)
// meanwhile; a Leave ends the member at once (its last report says every
// item released, Held is empty), and the drain runs with its own Hold,
// valid until it ends. Writes made in it through Hold.Fenced are still
// fenced. An item lost (its node gone, its session ended) is not drained:
// it is no longer held. A Leave that comes while an item drains stops
// that run and drains the item again. The task must not wait for its
// member's Leave (the Leave waits for the drains: neither would end).
// Without it, or with fn nil, items are given up at once.
func WithDrain(fn func(h Hold) task.Task[task.Unit]) Option {
	return optionFunc(func(c *config) { c.Drain = fn })
}

// WithACL gives, by path, the ACL of every node a member creates: the
// directories and their ancestors, its party node, and its lock nodes
// (for those, the path sent: path/locks/<item>/<32 hex digits>__lock__,
// the digits drawn for each attempt). Without it,
// or with p nil, they get task.OpenACL. Creates passed to Fenced keep
// their own ACL.
func WithACL(p task.ACLProvider) Option { return optionFunc(func(c *config) { c.ACL = p }) }

// KazooAssign is kazoo's SetPartitioner default partition function: the
// sorted items i, i+n, i+2n, ... where i is the first index of identifier
// among the n sorted member identifiers (an identifier listed twice
// counts twice, as kazoo counts it). Nil if identifier is not a member.
func KazooAssign(identifier string, members, items []string) []string {
	i := slices.Index(members, identifier)
	if i < 0 {
		return nil
	}
	if i >= len(items) {
		return nil
	}
	out := make([]string, 0, (len(items)-i+len(members)-1)/len(members))
	for ; i < len(items); i += len(members) {
		out = append(out, items[i])
	}
	return out
}

// Partitioner is one partitioned set: what New validated. It holds no
// state; one value may be shared by many members and executors.
type Partitioner struct {
	cfg   config
	items []string // sorted
	kazoo bool     // cfg.Assign is the default, KazooAssign, which neither keeps nor changes its arguments
	// The party's directory and each item's lock directory (by the
	// index of the item in items), made once in New.
	party    string
	itemDirs []string
}

// New returns the partitioned set of items under path (kazoo's path):
// members join path/party, item locks live under path/locks/<item>, all
// created on first use. Each item is one path component (kazoo's
// str(item)); the set may be empty. A bad path, item (one listed twice,
// say) or option fails with an error wrapping task.ErrInvalidPath or
// task.ErrInvalidArgument.
func New(path string, items []string, opts ...Option) (*Partitioner, error) {
	cfg := config{Path: path, Items: items}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("partition: nil option: %w", task.ErrInvalidArgument)
		}
		o.apply(&cfg)
	}
	if err := task.ValidatePath(cfg.Path, false); err != nil {
		return nil, fmt.Errorf("partition: path %q: %w", cfg.Path, err)
	}
	if cfg.Path == "/" || cfg.Path == "/zookeeper" || strings.HasPrefix(cfg.Path, "/zookeeper/") {
		return nil, fmt.Errorf("partition: path %q: reserved: %w", cfg.Path, task.ErrInvalidPath)
	}
	if cfg.Stable < 0 {
		return nil, fmt.Errorf("partition: negative WithStable %v: %w", cfg.Stable, task.ErrInvalidArgument)
	}
	if cfg.Stable == 0 {
		cfg.Stable = DefaultStable
	}
	kazoo := cfg.Assign == nil
	if kazoo {
		cfg.Assign = KazooAssign
	}
	items = slices.Clone(cfg.Items)
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
	p := &Partitioner{cfg: cfg, items: items, kazoo: kazoo, party: cfg.Path + "/party", itemDirs: make([]string, len(items))}
	for i, it := range items {
		p.itemDirs[i] = cfg.Path + "/locks/" + it
	}
	return p, nil
}

// Path is the partitioner's directory.
func (p *Partitioner) Path() string { return p.cfg.Path }

// Items is the set, sorted.
func (p *Partitioner) Items() []string { return slices.Clone(p.items) }

func (p *Partitioner) partyDir() string {
	if p.party != "" {
		return p.party
	}
	return p.cfg.Path + "/party"
}

// ItemDir is the directory of item's lock (kazoo's Lock path).
func (p *Partitioner) ItemDir(item string) string {
	if i, ok := slices.BinarySearch(p.items, item); ok && i < len(p.itemDirs) {
		return p.itemDirs[i]
	}
	return p.cfg.Path + "/locks/" + item
}

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
	var b [32]byte
	zkops.PutHex(b[:16], hi)
	zkops.PutHex(b[16:], lo)
	return string(b[:])
}

// partyPath is dir + "/" + hexID(s) + "-" + id, a party node's path, and
// the name in it, in one allocation.
func partyPath(s *task.Scope, dir, id string) (path, name string) {
	hi, lo := zkops.Draws(s)
	var hex [32]byte
	zkops.PutHex(hex[:16], hi)
	zkops.PutHex(hex[16:], lo)
	var b strings.Builder
	b.Grow(len(dir) + 1 + len(hex) + 1 + len(id))
	b.WriteString(dir)
	b.WriteByte('/')
	b.Write(hex[:])
	b.WriteByte('-')
	b.WriteString(id)
	path = b.String()
	return path, path[len(dir)+1:]
}

// lockTag is kazoo's Lock node tag: <hex>__lock__<seq>.
const lockTag = "__lock__"

// appendPartyMembers appends the identifiers of party node names (what
// follows the first "-", as kazoo's ShallowParty reads them) to ids, and
// sorts ids.
func appendPartyMembers(ids, names []string) []string {
	for _, n := range names {
		if i := strings.IndexByte(n, '-'); i >= 0 {
			ids = append(ids, n[i+1:])
		}
	}
	slices.Sort(ids)
	return ids
}
