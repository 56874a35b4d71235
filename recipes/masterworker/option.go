package masterworker

import "github.com/zkflow/zkflow/task"

// Option configures a System (New).
type Option interface{ apply(*System) }

type aclOption task.ACLProvider

func (o aclOption) apply(sys *System) { sys.acl = task.ACLProvider(o) }

// WithACL makes every master, worker and client of the system create its
// nodes with the ACL p gives for each path: the root, its ancestors and
// its directories (Setup), the /master node and its lease, workers'
// registrations and assignment directories, tasks (the path sent:
// /tasks/task-<id>-), assignments, tasks moved back, and status nodes.
// Without it, or with p nil, they get task.OpenACL.
func WithACL(p task.ACLProvider) Option { return aclOption(p) }
