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
func WithACL(p task.ACLProvider) Option { return aclOption(p) }
