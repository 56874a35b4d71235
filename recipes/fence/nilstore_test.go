package fence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/recipes/fence"
	"github.com/zkflow/zkflow/task"
)

// write.go, run: a nil store is refused with "fence: nil store:
// task.ErrInvalidArgument" (the check the blocking and task faces both
// make for bad input). A nil *fence.Memory (the package's own Store, as a
// caller's unset field of type *fence.Memory passed as a fence.Store)
// is not caught by `s == nil` (the interface holds a typed nil) and the
// call panics with a nil dereference instead of the typed error.
// A nil *fence.Memory passed as a Store is a non-nil interface: Write's
// nil-store check let it through, and Write and Read panicked on it. Its
// methods now fail with task.ErrInvalidArgument, as a nil Store does.
func TestTypedNilMemoryIsRefused(t *testing.T) {
	ctx := context.Background()
	var mem *fence.Memory // never set
	try := func(name string, f func() error) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s with a nil *fence.Memory: panic %v; want an error matching task.ErrInvalidArgument", name, r)
			}
		}()
		if err := f(); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("%s with a nil *fence.Memory: %v; want task.ErrInvalidArgument", name, err)
		}
	}
	try("Write", func() error { return fence.Write[uint64](ctx, mem, "k", 1, []byte("v")) })
	try("Read", func() error { _, err := fence.Read[uint64](ctx, mem, "k", 1); return err })
	// For comparison: the untyped nil gets the typed error.
	if err := fence.Write[uint64](ctx, nil, "k", 1, nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Write with a nil Store: %v", err)
	}
}
