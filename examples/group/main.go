// Command group shows group membership: services, each with its own
// ZooKeeper session, join a group with their address as data, and a
// watcher on another session follows the member list. On the embedded
// server, one member's session is expired: its node goes with the
// session, and the member registers again on its new session. Then one
// member leaves and another one's session is closed (its node goes); the
// watcher sees each change. It checks that the watcher's view ends equal
// to the server's member list, prints a summary, and exits 1 if a check
// failed.
//
//	go run ./examples/group                 # embedded in-memory ZooKeeper (fakezk)
//	go run ./examples/group -zk host:2181   # a real server or ensemble
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/task"
)

type options struct {
	servers string // -zk
	seed    uint64
	members int
	timeout time.Duration
}

func parse(args []string, out io.Writer) (*options, error) {
	o := new(options)
	fs := flag.NewFlagSet("group", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.servers, "zk", "", "ZooKeeper servers, host:port[,host:port...][/root] (the root node must exist); empty runs an embedded fakezk")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the embedded fakezk")
	fs.IntVar(&o.members, "members", 3, "members, each with its own session (at least 3)")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.members < 3 {
		return o, fmt.Errorf("-members must be at least 3")
	}
	return o, nil
}

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	o, err := parse(args, out)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	// srv is the embedded server, nil when -zk names a real one; there the
	// example's nodes go under a root of their own, apart from other runs,
	// and are deleted at the end.
	var srv *fakezk.Server
	where, root := "ZooKeeper at "+o.servers, fmt.Sprintf("/group-example-%x", rand.Uint64())
	if o.servers == "" {
		srv = fakezk.New(fakezk.Config{Seed: o.seed})
		defer srv.Close()
		where, root = fmt.Sprintf("embedded ZooKeeper (fakezk), seed %d", o.seed), "/group-example"
	}
	dir := root + "/members"
	fmt.Fprintf(out, "%s, %d members, group %s\n", where, o.members, dir)
	// The cleaner, the run's first session and one no fault touches,
	// deletes the run's nodes at the end, whatever happened: deferred
	// first, cleanUp runs last, once every other process has stopped.
	cleaner, err := start(ctx, srv, o.servers)
	if err != nil {
		return err
	}
	defer cleaner.stop()
	defer func() { err = cleanUp(ctx, cleaner.ex, root, err, out) }()

	// open starts a client and its group.Client.
	open := func() (*process, *group.Client, error) {
		c, err := start(ctx, srv, o.servers)
		if err != nil {
			return nil, nil, err
		}
		gc, err := group.NewClient(c.ex, dir)
		if err != nil {
			c.stop()
		}
		return c, gc, err
	}

	// The watcher.
	ws, wc, err := open()
	if err != nil {
		return err
	}
	defer ws.stop()
	w, err := wc.Watch(ctx)
	if err != nil {
		return err
	}
	defer w.Stop(ctx)
	var checks Checks
	check := checks.Check
	// await prints the watcher's changes until Next has returned the
	// members want. It goes by what Next returned, not by Members: Next
	// coalesces, so a change that Members showed and then undid (a member
	// gone and back) is never returned, and waiting for it would block.
	expired, stop := context.WithCancel(ctx)
	stop()
	var last []string // the members Next returned last
	await := func(want ...string) error {
		for {
			// Once Next has returned the members wanted, print what is
			// left without waiting.
			nctx := ctx
			if slices.Equal(last, want) {
				nctx = expired
			}
			ch, err := w.Next(nctx)
			if err != nil {
				if nctx == expired && ctx.Err() == nil {
					return nil
				}
				return fmt.Errorf("watching for %v: %w", want, err)
			}
			last = ch.Members
			fmt.Fprintf(out, "  watcher: members %v (joined %v, left %v)\n", ch.Members, ch.Added, ch.Removed)
		}
	}
	if err := await(); err != nil {
		return err
	}

	// The members join.
	fmt.Fprintln(out, "1. members join")
	ids := make([]string, o.members)
	sess := make([]*process, o.members)
	clients := make([]*group.Client, o.members)
	members := make([]*group.Member, o.members)
	for i := range ids {
		ids[i] = fmt.Sprintf("api-%d", i+1)
		if sess[i], clients[i], err = open(); err != nil {
			return err
		}
		defer sess[i].stop()
		addr := fmt.Sprintf("10.0.0.%d:8080", i+1)
		if members[i], err = clients[i].Join(ctx, ids[i], []byte(addr)); err != nil {
			return err
		}
	}
	if err := await(ids...); err != nil {
		return err
	}
	d, err := executor.Await(ctx, ws.ex, task.Get(dir+"/"+ids[0]))
	if err != nil {
		return err
	}
	check(string(d.Data) == "10.0.0.1:8080", "%s's data read back: %s", ids[0], d.Data)

	// A session expiry (embedded server only): the member registers again.
	if srv != nil {
		fmt.Fprintf(out, "2. %s's session expires\n", ids[1])
		conn := sess[1].conn.(*fakezk.Conn)
		old := conn.SessionID()
		srv.Expire(conn)
		if err := awaitOwned(ctx, sess[1].ex, members[1].Path(), conn); err != nil {
			return err
		}
		check(conn.SessionID() != old, "%s registered again on its new session (%#x, was %#x)", ids[1], conn.SessionID(), old)
		if err := await(ids...); err != nil {
			return err
		}
	}

	// A member leaves; another one's session is closed.
	fmt.Fprintf(out, "3. %s leaves\n", ids[0])
	if err := clients[0].Leave(ctx, members[0]); err != nil {
		return err
	}
	if err := await(ids[1:]...); err != nil {
		return err
	}
	fmt.Fprintf(out, "4. %s's session is closed\n", ids[2])
	sess[2].stop()
	rest := append([]string{ids[1]}, ids[3:]...)
	if err := await(rest...); err != nil {
		return err
	}

	// The view agrees with the server.
	cl, err := executor.Await(ctx, ws.ex, task.Children(dir))
	if err != nil {
		return err
	}
	server := slices.Sorted(slices.Values(cl.Names))
	check(slices.Equal(w.Members(), server), "the watcher's view %v is the server's member list %v", w.Members(), server)
	check(errors.Is(members[2].Err(), task.ErrClosed), "%s's member ended when its session was closed: %v", ids[2], members[2].Err())

	checks.Check(backgroundErrors.Load() == 0, "no background flow failed (%d)", backgroundErrors.Load())
	return checks.Report(out)
}

// awaitOwned waits, with exists watches on ex's session, until path is an
// ephemeral node of conn's current session.
func awaitOwned(ctx context.Context, ex *executor.Executor, path string, conn *fakezk.Conn) error {
	for {
		sw, err := executor.AwaitAcrossExpiry(ctx, ex, task.ExistsW(path))
		if err != nil {
			return err
		}
		if sw.Stat != nil && sw.Stat.EphemeralOwner == conn.SessionID() {
			return nil
		}
		if _, err := executor.AwaitAcrossExpiry(ctx, ex, sw.Watch.Wait()); err != nil {
			return err
		}
	}
}
