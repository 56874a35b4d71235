package recipes_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/recipes/idpersist"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/recipes/queue"
	"github.com/zkflow/zkflow/recipes/rwlock"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// Every recipe creates the directories it needs: each one's first
// operation, on a server with nothing but the root, under a path three
// levels deep, succeeds (and the path is then on the server), instead of
// failing with task.ErrNoNode or waiting for a node no one creates.
// Readers (the caches) create nothing: they start on a missing path and
// follow its creation.
func TestRecipesCreateTheirDirectories(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, rc := range []struct {
		name   string
		reader bool
		run    func(ctx context.Context, ex *executor.Executor, dir string) error
	}{
		{"lock", false, func(ctx context.Context, ex *executor.Executor, dir string) error {
			c, err := lock.NewClient(ex, dir)
			if err != nil {
				return err
			}
			h, err := c.Acquire(ctx)
			if err != nil {
				return err
			}
			return c.Release(ctx, h)
		}},
		{"rwlock", false, func(ctx context.Context, ex *executor.Executor, dir string) error {
			c, err := rwlock.NewClient(ex, dir)
			if err != nil {
				return err
			}
			h, err := c.AcquireRead(ctx)
			if err != nil {
				return err
			}
			return c.Release(ctx, h)
		}},
		{"semaphore", false, func(ctx context.Context, ex *executor.Executor, dir string) error {
			c, err := semaphore.NewClient(ex, dir, 2)
			if err != nil {
				return err
			}
			l, err := c.Acquire(ctx)
			if err != nil {
				return err
			}
			return c.Release(ctx, l)
		}},
		{"election", false, func(ctx context.Context, ex *executor.Executor, dir string) error {
			c, err := election.NewClient(ex, dir)
			if err != nil {
				return err
			}
			l, err := c.Campaign(ctx)
			if err != nil {
				return err
			}
			return c.Resign(ctx, l)
		}},
		{"election master", false, func(ctx context.Context, ex *executor.Executor, dir string) error {
			c, err := election.NewMasterClient(ex, dir+"/master")
			if err != nil {
				return err
			}
			l, err := c.Campaign(ctx)
			if err != nil {
				return err
			}
			return c.Resign(ctx, l)
		}},
		{"queue", false, func(ctx context.Context, ex *executor.Executor, dir string) error {
			c, err := queue.NewClient(ex, dir)
			if err != nil {
				return err
			}
			if _, err := c.Put(ctx, []byte("x")); err != nil {
				return err
			}
			_, err = c.Take(ctx)
			return err
		}},
		{"group", false, func(ctx context.Context, ex *executor.Executor, dir string) error {
			c, err := group.NewClient(ex, dir)
			if err != nil {
				return err
			}
			m, err := c.Join(ctx, "a", nil)
			if err != nil {
				return err
			}
			return c.Leave(ctx, m)
		}},
		{"barrier", false, func(ctx context.Context, ex *executor.Executor, dir string) error {
			c, err := barrier.NewClient(ex, dir+"/b")
			if err != nil {
				return err
			}
			return c.Set(ctx, nil)
		}},
		{"double barrier", false, func(ctx context.Context, ex *executor.Executor, dir string) error {
			c, err := barrier.NewDoubleClient(ex, dir, 1)
			if err != nil {
				return err
			}
			p, err := c.Enter(ctx)
			if err != nil {
				return err
			}
			return c.Leave(ctx, p)
		}},
		{"seqid", false, func(ctx context.Context, ex *executor.Executor, dir string) error {
			c, err := seqid.NewClient(ex, dir+"/seq", 10)
			if err != nil {
				return err
			}
			_, err = c.Next(ctx)
			return err
		}},
		{"discovery", false, func(ctx context.Context, ex *executor.Executor, dir string) error {
			c, err := discovery.NewClient(ex, dir)
			if err != nil {
				return err
			}
			r, err := c.Register(ctx, discovery.Instance{Name: "svc", ID: "a", Address: "h", Port: 1})
			if err != nil {
				return err
			}
			return c.Unregister(ctx, r)
		}},
		{"partition", false, func(ctx context.Context, ex *executor.Executor, dir string) error {
			c, err := partition.NewClient(ex, dir, []string{"x"}, partition.WithStable(time.Millisecond))
			if err != nil {
				return err
			}
			m, err := c.Join(ctx, "a", nil)
			if err != nil {
				return err
			}
			if _, err := c.Wait(ctx, m); err != nil {
				return err
			}
			return c.Leave(ctx, m)
		}},
		{"config", false, func(ctx context.Context, ex *executor.Executor, dir string) error {
			c, err := config.NewClient(ex, dir)
			if err != nil {
				return err
			}
			return c.Update(ctx, map[string][]byte{"k": []byte("v")})
		}},
		{"masterworker", false, func(ctx context.Context, ex *executor.Executor, dir string) error {
			sys, err := masterworker.New(dir)
			if err != nil {
				return err
			}
			c, err := sys.NewClient(ex, "client")
			if err != nil {
				return err
			}
			_, err = c.Submit(ctx, []byte("job"))
			return err
		}},
		{"idpersist", false, func(ctx context.Context, ex *executor.Executor, dir string) error {
			store, err := idpersist.NewFileStore(filepath.Join(t.TempDir(), "mark"))
			if err != nil {
				return err
			}
			cfg := idpersist.Config{Sequence: dir + "/seq", Limit: dir + "/limit", Election: dir + "/election", Store: store}
			r, err := idpersist.NewReplica(cfg)
			if err != nil {
				return err
			}
			sctx, stop := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); _ = r.Serve(sctx, ex) }()
			defer func() { stop(); wg.Wait() }()
			g, err := idpersist.NewClient(ex, cfg)
			if err != nil {
				return err
			}
			_, err = g.Next(ctx)
			return err
		}},
		{"cache", true, func(ctx context.Context, ex *executor.Executor, dir string) error {
			c, err := cache.NewTreeClient(ex, dir)
			if err != nil {
				return err
			}
			if err := c.Start(ctx); err != nil {
				return err
			}
			if _, err := executor.Await(ctx, ex, task.Create("/fresh", nil, task.Persistent)); err != nil {
				return err
			}
			if _, err := executor.Await(ctx, ex, task.Create("/fresh/cache", nil, task.Persistent)); err != nil {
				return err
			}
			if _, err := executor.Await(ctx, ex, task.Create(dir, nil, task.Persistent)); err != nil {
				return err
			}
			for len(c.Current()) == 0 {
				if _, err := c.Next(ctx); err != nil {
					return err
				}
			}
			return c.Stop(ctx)
		}},
	} {
		t.Run(rc.name, func(t *testing.T) {
			srv := fakezk.New(fakezk.Config{})
			defer srv.Close()
			ex := start(t, srv)
			dir := "/fresh/" + strings.ReplaceAll(rc.name, " ", "-") + "/dir"
			if err := rc.run(ctx, ex, dir); err != nil {
				t.Fatalf("on a fresh server: %v", err)
			}
			if st, err := executor.Await(ctx, ex, task.Exists(dir)); st == nil || err != nil {
				t.Fatalf("%s after the first operation: stat %v, %v", dir, st, err)
			}
		})
	}
}
