package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/recipes/fence"
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

// A nil context is bad input: every exported call that takes a ctx (the
// executor's blocking functions, each recipe's blocking face, the
// handles it returns, fence's functions and Memory) refuses it with an
// error matching executor.ErrNilContext, never a panic or a hang. A call
// that gives something up (a release, a resign, a leave, a stop, an ack)
// gives it up all the same, in the background, as for a ctx that has
// ended: the node it held goes away.
func TestNilContextRefused(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	bg := context.Background()
	run, stop := context.WithCancel(bg)
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: srv.Clock(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ex.Run(run) }()
	defer func() { stop(); <-ran }()
	var nilCtx context.Context

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must2 := func(_ any, err error) { t.Helper(); must(err) }
	// gone waits until the node at path does not exist (a guard against
	// a hang bounds it, not an ordering).
	gone := func(path string) error {
		b, err := barrier.NewClient(ex, path)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		defer cancel()
		if err := b.Wait(ctx); err != nil {
			return fmt.Errorf("node %s still there after the give-back: %w", path, err)
		}
		return nil
	}
	dir := func(name string) string { return "/nilctx/" + name }

	// What the calls need: a Client of each recipe, and the handles the
	// give-backs and the handles' own methods take, got with a live ctx.
	// A lock Client, an rwlock Client and a DoubleClient that hold refuse
	// another take at once (ErrAlreadyHeld): the takes go to free ones.
	lk, err := lock.NewClient(ex, dir("lock"))
	must(err)
	held, err := lk.Acquire(bg)
	must(err)
	freeLk, err := lock.NewClient(ex, dir("lock"))
	must(err)
	rw, err := rwlock.NewClient(ex, dir("rwlock"))
	must(err)
	freeRw, err := rwlock.NewClient(ex, dir("rwlock"))
	must(err)
	rwHeld, err := rw.AcquireRead(bg)
	must(err)
	sem, err := semaphore.NewClient(ex, dir("semaphore"), 2)
	must(err)
	lease, err := sem.Acquire(bg)
	must(err)
	el, err := election.NewClient(ex, dir("election"))
	must(err)
	leadership, err := el.Campaign(bg)
	must(err)
	gate, err := barrier.NewClient(ex, dir("barrier"))
	must(err)
	round, err := barrier.NewDoubleClient(ex, dir("double"), 1)
	must(err)
	participant, err := round.Enter(bg)
	must(err)
	freeRound, err := barrier.NewDoubleClient(ex, dir("double"), 1)
	must(err)
	q, err := queue.NewClient(ex, dir("queue"), queue.WithMode(queue.AtLeastOnce))
	must(err)
	must2(q.Put(bg, []byte("x")))
	item, err := q.Take(bg)
	must(err)
	ids, err := seqid.NewClient(ex, dir("seqid"), 1)
	must(err)
	blockIDs, err := seqid.NewClient(ex, dir("seqid-blocks"), 10)
	must(err)
	must2(blockIDs.Next(bg)) // a block in hand
	persistCfg := idpersist.Config{Sequence: dir("idpersist/seq"), Limit: dir("idpersist/limit"), Election: dir("idpersist/election"),
		Chunk: 10, LowWater: 3}
	persistCfg.Store, err = idpersist.NewFileStore(filepath.Join(t.TempDir(), "mark"))
	must(err)
	replica, err := idpersist.NewReplica(persistCfg)
	must(err)
	persisted, err := idpersist.NewClient(ex, persistCfg)
	must(err)
	g, err := group.NewClient(ex, dir("group"))
	must(err)
	member, err := g.Join(bg, "m", nil)
	must(err)
	view, err := g.Watch(bg)
	must(err)
	part, err := partition.NewClient(ex, dir("partition"), []string{"a", "b"})
	must(err)
	partMember, err := part.Join(bg, "p", nil)
	must(err)
	holds, err := part.Wait(bg, partMember)
	must(err)
	disc, err := discovery.NewClient(ex, dir("discovery"))
	must(err)
	reg, err := disc.Register(bg, discovery.Instance{Name: "s", ID: "i", Port: 80})
	must(err)
	services, err := disc.StartCache(bg, "s")
	must(err)
	children, err := cache.NewChildrenClient(ex, dir("group"))
	must(err)
	must(children.Start(bg))
	taskCache, err := cache.NewChildren(dir("group"))
	must(err)
	must2(executor.Await(bg, ex, taskCache.Start()))
	cfg, err := config.NewClient(ex, dir("config"))
	must(err)
	reader, err := cfg.Watch(bg)
	must(err)
	sys, err := masterworker.New(dir("masterworker"))
	must(err)
	master, err := sys.Master("master")
	must(err)
	worker, err := sys.Worker("worker", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	must(err)
	submitter, err := sys.NewClient(ex, "client")
	must(err)
	var store fence.Memory
	values := map[string][]byte{"k": []byte("v")}

	calls := []struct {
		name  string
		call  func() error
		gives string          // a node the call gives up: gone once its give-back has run
		ends  <-chan struct{} // closed once the stop the call starts has run
	}{
		{name: "executor.Await", call: func() error { _, err := executor.Await(nilCtx, ex, task.Value(1)); return err }},
		{name: "executor.AwaitAcrossExpiry", call: func() error { _, err := executor.AwaitAcrossExpiry(nilCtx, ex, task.Value(1)); return err }},
		{name: "Executor.Run", call: func() error { return ex.Run(nilCtx) }},
		{name: "Executor.Get", call: func() error { _, err := ex.Get(nilCtx, "/"); return err }},
		{name: "Executor.Set", call: func() error { _, err := ex.Set(nilCtx, "/", nil, task.AnyVersion); return err }},
		{name: "Executor.Create", call: func() error { _, err := ex.Create(nilCtx, dir("n"), nil, task.Persistent); return err }},
		{name: "Executor.Delete", call: func() error { return ex.Delete(nilCtx, dir("n"), task.AnyVersion) }},
		{name: "Executor.DeleteAll", call: func() error { _, err := ex.DeleteAll(nilCtx, dir("n")); return err }},
		{name: "Executor.Children", call: func() error { _, err := ex.Children(nilCtx, "/"); return err }},
		{name: "Executor.Exists", call: func() error { _, err := ex.Exists(nilCtx, "/"); return err }},
		{name: "Executor.Multi", call: func() error { _, err := ex.Multi(nilCtx, task.CheckOp("/", task.AnyVersion)); return err }},
		{name: "Executor.Sync", call: func() error { return ex.Sync(nilCtx, "/") }},

		{name: "lock Acquire", call: func() error { _, err := freeLk.Acquire(nilCtx); return err }},
		{name: "lock TryAcquire", call: func() error { _, err := freeLk.TryAcquire(nilCtx); return err }},
		{name: "lock Fenced", call: func() error { _, err := lk.Fenced(nilCtx, held); return err }},
		{name: "lock Release", call: func() error { return lk.Release(nilCtx, held) }, gives: held.Path()},

		{name: "rwlock Acquire", call: func() error { _, err := freeRw.Acquire(nilCtx); return err }},
		{name: "rwlock AcquireRead", call: func() error { _, err := freeRw.AcquireRead(nilCtx); return err }},
		{name: "rwlock TryAcquire", call: func() error { _, err := freeRw.TryAcquire(nilCtx); return err }},
		{name: "rwlock TryAcquireRead", call: func() error { _, err := freeRw.TryAcquireRead(nilCtx); return err }},
		{name: "rwlock Fenced", call: func() error { _, err := rw.Fenced(nilCtx, rwHeld); return err }},
		{name: "rwlock Release", call: func() error { return rw.Release(nilCtx, rwHeld) }, gives: rwHeld.Path()},

		{name: "semaphore Acquire", call: func() error { _, err := sem.Acquire(nilCtx); return err }},
		{name: "semaphore TryAcquire", call: func() error { _, err := sem.TryAcquire(nilCtx); return err }},
		{name: "semaphore AcquireMany", call: func() error { _, err := sem.AcquireMany(nilCtx, 1); return err }},
		{name: "semaphore Fenced", call: func() error { _, err := sem.Fenced(nilCtx, lease); return err }},
		{name: "semaphore Release", call: func() error { return sem.Release(nilCtx, lease) }, gives: lease.Path()},

		{name: "election Campaign", call: func() error { _, err := el.Campaign(nilCtx); return err }},
		{name: "election Leader", call: func() error { _, err := el.Leader(nilCtx); return err }},
		{name: "election Observe", call: func() error { _, err := el.Observe(nilCtx); return err }},
		{name: "election Lead", call: func() error {
			return el.Lead(nilCtx, election.LeadOptions{}, func(context.Context, *election.Leadership) error { return nil })
		}},
		{name: "election Fenced", call: func() error { _, err := el.Fenced(nilCtx, leadership); return err }},
		{name: "election Resign", call: func() error { return el.Resign(nilCtx, leadership) }, gives: leadership.Path()},

		{name: "barrier Set", call: func() error { return gate.Set(nilCtx, nil) }},
		{name: "barrier Wait", call: func() error { return gate.Wait(nilCtx) }},
		{name: "barrier Remove", call: func() error { return gate.Remove(nilCtx) }},
		{name: "double barrier Enter", call: func() error { _, err := freeRound.Enter(nilCtx); return err }},
		{name: "double barrier Leave", call: func() error { return round.Leave(nilCtx, participant) }, gives: participant.Path()},

		{name: "queue Put", call: func() error { _, err := q.Put(nilCtx, []byte("y")); return err }},
		{name: "queue PutPriority", call: func() error { _, err := q.PutPriority(nilCtx, []byte("y"), 1); return err }},
		{name: "queue Take", call: func() error { _, err := q.Take(nilCtx); return err }},
		{name: "queue Settle", call: func() error { return q.Settle(nilCtx) }},
		{name: "queue Ack", call: func() error { return q.Ack(nilCtx, item) }},

		{name: "seqid Next", call: func() error { _, err := ids.Next(nilCtx); return err }},
		{name: "seqid Next with blocks", call: func() error { _, err := blockIDs.Next(nilCtx); return err }},

		{name: "idpersist Next", call: func() error { _, err := persisted.Next(nilCtx); return err }},
		{name: "idpersist Replica.Serve", call: func() error { return replica.Serve(nilCtx, ex) }},

		{name: "group Join", call: func() error { _, err := g.Join(nilCtx, "n", nil); return err }},
		{name: "group Watch", call: func() error { _, err := g.Watch(nilCtx); return err }},
		{name: "group Watcher.Next", call: func() error { _, err := view.Next(nilCtx); return err }},
		{name: "group Watcher.Stop", call: func() error { return view.Stop(nilCtx) }},
		{name: "group Leave", call: func() error { return g.Leave(nilCtx, member) }, gives: member.Path()},

		{name: "partition Join", call: func() error { _, err := part.Join(nilCtx, "q", nil); return err }},
		{name: "partition Wait", call: func() error { _, err := part.Wait(nilCtx, partMember); return err }},
		{name: "partition Fenced", call: func() error { _, err := part.Fenced(nilCtx, partMember, "a"); return err }},
		{name: "partition FencedHold", call: func() error { _, err := part.FencedHold(nilCtx, partMember, holds[0]); return err }},
		{name: "partition Leave", call: func() error { return part.Leave(nilCtx, partMember) }},

		{name: "discovery Register", call: func() error {
			_, err := disc.Register(nilCtx, discovery.Instance{Name: "s", ID: "j", Port: 80})
			return err
		}},
		{name: "discovery Names", call: func() error { _, err := disc.Names(nilCtx); return err }},
		{name: "discovery Query", call: func() error { _, err := disc.Query(nilCtx, "s"); return err }},
		{name: "discovery StartCache", call: func() error { _, err := disc.StartCache(nilCtx, "s"); return err }},
		{name: "discovery ServiceCache.Next", call: func() error { _, err := services.Next(nilCtx); return err }},
		{name: "discovery ServiceCache.Stop", call: func() error { return services.Stop(nilCtx) }, ends: services.Cache().Done()},
		{name: "discovery Unregister", call: func() error { return disc.Unregister(nilCtx, reg) }, gives: reg.Path()},

		{name: "cache Client.Next", call: func() error { _, err := children.Next(nilCtx); return err }},
		{name: "cache Client.Stop", call: func() error { return children.Stop(nilCtx) }, ends: children.Done()},
		{name: "cache Client.Start", call: func() error {
			c, err := cache.NewNodeClient(ex, dir("config"))
			if err != nil {
				return err
			}
			return c.Start(nilCtx)
		}},
		{name: "cache ChildrenCache.AwaitNext", call: func() error { _, err := taskCache.AwaitNext(nilCtx, ex); return err }},

		{name: "config WatchDir", call: func() error { _, err := cfg.WatchDir(nilCtx, config.DirOptions{}); return err }},
		{name: "config Watch", call: func() error { _, err := cfg.Watch(nilCtx); return err }},
		{name: "config Update", call: func() error { return cfg.Update(nilCtx, values) }},
		{name: "config UpdateMarked", call: func() error { return cfg.UpdateMarked(nilCtx, values) }},
		{name: "config Reader.Next", call: func() error { _, err := reader.Next(nilCtx); return err }},
		{name: "config Reader.Stop", call: func() error { return reader.Stop(nilCtx) }},

		{name: "masterworker Master.Serve", call: func() error { return master.Serve(nilCtx, ex) }},
		{name: "masterworker Worker.Serve", call: func() error { return worker.Serve(nilCtx, ex) }},
		{name: "masterworker Submit", call: func() error { _, err := submitter.Submit(nilCtx, nil); return err }},
		{name: "masterworker Wait", call: func() error { _, err := submitter.Wait(nilCtx, "task-0000000000"); return err }},
		{name: "masterworker Do", call: func() error { _, err := submitter.Do(nilCtx, nil); return err }},

		{name: "fence Memory.Load", call: func() error { _, _, err := store.Load(nilCtx, "k"); return err }},
		{name: "fence Memory.CompareAndSwap", call: func() error {
			_, err := store.CompareAndSwap(nilCtx, "k", 0, fence.Entry{Token: 1})
			return err
		}},
		{name: "fence Write", call: func() error { return fence.Write(nilCtx, &store, "k", 1, []byte("v")) }},
		{name: "fence Delete", call: func() error { return fence.Delete(nilCtx, &store, "k", 1) }},
		{name: "fence Update", call: func() error {
			_, err := fence.Update(nilCtx, &store, "k", 1, func(old []byte) ([]byte, error) { return old, nil })
			return err
		}},
		{name: "fence Read", call: func() error { _, err := fence.Read(nilCtx, &store, "k", 1); return err }},
	}
	for _, c := range calls {
		// Each call on a goroutine of its own, so that a hang fails the
		// test rather than stalls it (a guard, not an ordering).
		done := make(chan error, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					done <- fmt.Errorf("panic: %v", p)
				}
			}()
			done <- c.call()
		}()
		select {
		case err := <-done:
			if !errors.Is(err, executor.ErrNilContext) {
				t.Errorf("%s with a nil ctx = %v, want executor.ErrNilContext", c.name, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s with a nil ctx still runs after 20 s", c.name)
		}
		if c.gives != "" {
			if err := gone(c.gives); err != nil {
				t.Errorf("%s with a nil ctx: %v", c.name, err)
			}
		}
		if c.ends != nil {
			select {
			case <-c.ends:
			case <-time.After(20 * time.Second):
				t.Errorf("%s with a nil ctx: not stopped 20 s later", c.name)
			}
		}
	}
	// The stores refused before writing: nothing was written.
	if e, v, err := store.Load(bg, "k"); err != nil || v != 0 || e.Token != 0 {
		t.Errorf("fence store after the refused calls: %+v, version %d, %v; want no entry", e, v, err)
	}
	must2(executor.Await(bg, ex, taskCache.Stop()))
}
