package semaphore

import "github.com/zkflow/zkflow/task"

// Option configures a semaphore (New, NewClient).
type Option interface{ apply(*Semaphore) }

type aclOption task.ACLProvider

func (o aclOption) apply(m *Semaphore) { m.acl = task.ACLProvider(o) }

// WithACL makes the semaphore create its lease nodes, the internal lock's
// nodes, and the directories and ancestors it creates with the ACL p
// gives for each path (for a lease node, the path sent:
// PATH/leases/_c_<id>-lease-). Without it, or with p nil, they get
// task.OpenACL. Creates passed to Lease.Fenced keep their own ACL.
func WithACL(p task.ACLProvider) Option { return aclOption(p) }
