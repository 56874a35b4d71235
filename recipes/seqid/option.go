package seqid

import (
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// Option configures the functions and types of the package that may
// create the sequence node (Next, Reserve, NewCounter, NewAllocator,
// NewClient).
type Option interface{ apply(*options) }

type options struct {
	acl task.ACLProvider
}

func newOptions(opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if opt == nil {
			return options{}, fmt.Errorf("seqid: nil option: %w", task.ErrInvalidArgument)
		}
		opt.apply(&o)
	}
	return o, nil
}

type aclOption task.ACLProvider

func (a aclOption) apply(o *options) { o.acl = task.ACLProvider(a) }

// WithACL makes a missing sequence node, and its missing ancestors, be
// created with the ACL p gives for each path. Without it, or with p nil,
// they get task.OpenACL.
func WithACL(p task.ACLProvider) Option { return aclOption(p) }
