package config_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/task"
)

// The package doc: "Bad input (... nil handlers, a nil executor) fails
// with task.ErrInvalidPath or task.ErrInvalidArgument before anything is
// sent." A nil Client (a NewClient whose error was not checked) or a nil
// Reader panicked with a nil dereference in every method; a zero Client
// already failed with task.ErrInvalidArgument (its nil executor). They
// are refused now, as barrier's Clients are (TestZeroClientsAreRefused).
func TestNilClientAndReaderAreRefused(t *testing.T) {
	ctx := context.Background()
	vals := map[string][]byte{"a": []byte("1")}
	check := func(what string, f func() error) {
		t.Helper()
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("%s: panic %v", what, p)
			}
		}()
		if err := f(); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("%s = %v, want task.ErrInvalidArgument", what, err)
		}
	}
	for name, c := range map[string]*config.Client{"nil": nil, "zero": {}} {
		check(name+" Client.Update", func() error { return c.Update(ctx, vals) })
		check(name+" Client.UpdateMarked", func() error { return c.UpdateMarked(ctx, vals) })
		check(name+" Client.WatchDir", func() error { _, err := c.WatchDir(ctx, config.DirOptions{}); return err })
		check(name+" Client.Watch", func() error { _, err := c.Watch(ctx); return err })
	}
	for name, r := range map[string]*config.Reader{"nil": nil, "zero": {}} {
		check(name+" Reader.Next", func() error { _, err := r.Next(ctx); return err })
		check(name+" Reader.Stop", func() error { return r.Stop(ctx) })
		check(name+" Reader.Latest", func() error {
			if _, ok := r.Latest(); ok {
				return errors.New("a snapshot")
			}
			return task.ErrInvalidArgument
		})
	}
}
