package barrier

import (
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// Option configures a Barrier or a DoubleBarrier (New, NewDouble, NewClient,
// NewDoubleClient).
type Option interface{ apply(*options) }

type options struct {
	acl task.ACLProvider
}

func newOptions(opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if opt == nil {
			return options{}, fmt.Errorf("barrier: nil option: %w", task.ErrInvalidArgument)
		}
		opt.apply(&o)
	}
	return o, nil
}

type aclOption task.ACLProvider

func (a aclOption) apply(o *options) { o.acl = task.ACLProvider(a) }

// WithACL makes the barrier create its nodes with the ACL p gives for each
// path: a Barrier's node and the ancestors Set creates; a DoubleBarrier's
// participant nodes (the path sent: DIR/_p_<id>-), its ready node, and
// the directory and ancestors Enter creates. Without it, or with p nil,
// they get task.OpenACL.
func WithACL(p task.ACLProvider) Option { return aclOption(p) }
