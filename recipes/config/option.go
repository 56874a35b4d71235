package config

import (
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// Option configures a write of the package (Update, UpdateMarked).
type Option interface{ apply(*options) }

type options struct {
	acl task.ACLProvider
}

func newOptions(opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if opt == nil {
			return options{}, fmt.Errorf("config: nil option: %w", task.ErrInvalidArgument)
		}
		opt.apply(&o)
	}
	return o, nil
}

type aclOption task.ACLProvider

func (a aclOption) apply(o *options) { o.acl = task.ACLProvider(a) }

// WithACL makes a write create its nodes with the ACL p gives for each
// path: the entries it creates and the marker root/invalid (Update
// creates it in its multi, UpdateMarked for the length of the update).
// Without it, or with p nil, they get task.OpenACL.
func WithACL(p task.ACLProvider) Option { return aclOption(p) }
