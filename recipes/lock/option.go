package lock

import "github.com/zkflow/zkflow/task"

// Option configures a Lock (New, NewClient).
type Option interface{ apply(*Lock) }

type aclOption task.ACLProvider

func (o aclOption) apply(l *Lock) { l.acl = task.ACLProvider(o) }

// WithACL makes the lock create its contender nodes, and the directory
// and the ancestors it creates, with the ACL p gives for each path (for a
// contender, the path sent: DIR/_c_<id>-lock-). Without it, or with p nil,
// they get task.OpenACL. Creates passed to Held.Fenced keep their own ACL.
// A holder that waited writes the handoff mark into its node (see
// PROTOCOL.md, Handoff in one round trip): with an ACL that refuses WRITE
// on contender nodes (as Apache Curator's mutex, which never writes them,
// allows) the mark is refused and skipped, the hold goes on unmarked, and
// its successor lists the directory once it goes, as without the mark:
// one round trip more per handoff.
func WithACL(p task.ACLProvider) Option { return aclOption(p) }
