package group

import "github.com/zkflow/zkflow/task"

// Option configures a Group (New, NewClient).
type Option interface{ apply(*Group) }

type aclOption task.ACLProvider

func (o aclOption) apply(g *Group) { g.acl = task.ACLProvider(o) }

// WithACL makes the group create its member nodes (also when a member
// registers again), and the directory and the ancestors it creates, with
// the ACL p gives for each path. Without it, or with p nil, they get
// task.OpenACL.
func WithACL(p task.ACLProvider) Option { return aclOption(p) }
