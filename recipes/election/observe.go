package election

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/park"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/task"
)

// Observation is who leads an election, as an observer sees it.
type Observation struct {
	// Leading is false when nobody leads (no candidate, or no master).
	Leading bool
	// Path is the leader's node: its lowest candidate node (Election) or
	// the master node (Master).
	Path string
	// Data is that node's data: the leader's WithData.
	Data []byte
	// Token is the node's czxid, the leadership's fencing token
	// (Leadership.Token), and Session its ephemeral owner.
	Token   int64
	Session int64
}

// Observer follows who leads (Observe). Its methods are safe from any
// goroutine.
type Observer struct {
	fn func(Observation)

	mu     sync.Mutex
	latest Observation
	has    bool

	stop func() task.Task[task.Unit]
	done <-chan struct{}
	err  func() error
}

// Observe returns a task that follows who leads the election and calls fn
// with it, on the executor goroutine, in order: first with the leader at
// the start, then at each change of leader (another node leads, or nobody
// does). The leader an observer sees is the lowest candidate node: the
// candidate that leads or is about to (a campaign is granted once it has
// checked its node, a moment after it became the lowest), and one that
// has given up leading until its node is gone (the Leadership's own state
// is what the leader acts on; an observer sees the directory). Changes are
// read from a consistent snapshot of the directory (recipes/cache), so a
// leader that came and went between two snapshots may be skipped, the
// last one never is, and observations never go back in time; the observer
// follows the election across reconnects and session expiries, reading
// again on each new session. Each observer reads every candidate node and
// watches the directory: it wakes on every candidate that joins or
// leaves. fn must not block. The task succeeds with the Observer once the
// first observation is delivered; the Observer runs until Stop, or until
// an error no retry settles ends it (task.ErrNoAuth: an operator's ACL
// refused a read; Done, Err). Candidate nodes the session may not READ
// are outside these promises, as in recipes/cache: a change to one is
// withheld from the observer until its watch reads the node again.
func (e *Election) Observe(fn func(Observation)) task.Task[*Observer] {
	if e == nil || e.dir == "" {
		return task.Fail[*Observer](errZero("Election"))
	}
	if fn == nil {
		return task.Fail[*Observer](fmt.Errorf("election: nil observer: %w", task.ErrInvalidArgument))
	}
	if _, err := cache.NewChildren(e.dir, cache.WithData()); err != nil {
		return task.Fail[*Observer](fmt.Errorf("election: %w", err))
	}
	// Each run follows the directory with a cache of its own: running the
	// task twice starts two observers (a cache starts once).
	return func(s *task.Scope, k task.Cont[*Observer]) {
		o := &Observer{fn: fn}
		var cc *cache.ChildrenCache
		cc, err := cache.NewChildren(e.dir, cache.WithData(), cache.WithOnSynced(func() {
			o.deliver(lowest(e, cc.Current()))
		}))
		if err != nil {
			task.Resume(s, k, nil, fmt.Errorf("election: %w", err))
			return
		}
		o.stop, o.done, o.err = cc.Stop, cc.Done(), cc.Err
		task.Run(s, combinators.Map(cc.Start(), func(*cache.ChildrenCache) *Observer { return o }), k)
	}
}

// lowest is the lowest candidate among a directory's children.
func lowest(e *Election, kids []cache.Node) Observation {
	names := make([]string, 0, len(kids))
	byName := make(map[string]cache.Node, len(kids))
	for _, n := range kids {
		name := n.Path[len(e.dir)+1:]
		names = append(names, name)
		byName[name] = n
	}
	q := queue(names)
	if len(q) == 0 {
		return Observation{}
	}
	n := byName[q[0].Name]
	return Observation{Leading: true, Path: n.Path, Data: n.Data, Token: n.Stat.Czxid, Session: n.Stat.EphemeralOwner}
}

// Observe is Election.Observe for a Master: the leader is the master node.
func (m *Master) Observe(fn func(Observation)) task.Task[*Observer] {
	if m == nil || m.path == "" {
		return task.Fail[*Observer](errZero("Master"))
	}
	if fn == nil {
		return task.Fail[*Observer](fmt.Errorf("election: nil observer: %w", task.ErrInvalidArgument))
	}
	if _, err := cache.NewNode(m.path); err != nil {
		return task.Fail[*Observer](fmt.Errorf("election: %w", err))
	}
	return func(s *task.Scope, k task.Cont[*Observer]) { // a cache of its own for each run
		o := &Observer{fn: fn}
		var nc *cache.NodeCache
		nc, err := cache.NewNode(m.path, cache.WithOnSynced(func() {
			n, ok := nc.Current()
			if !ok {
				o.deliver(Observation{})
				return
			}
			o.deliver(Observation{Leading: true, Path: n.Path, Data: n.Data, Token: n.Stat.Czxid, Session: n.Stat.EphemeralOwner})
		}))
		if err != nil {
			task.Resume(s, k, nil, fmt.Errorf("election: %w", err))
			return
		}
		o.stop, o.done, o.err = nc.Stop, nc.Done(), nc.Err
		task.Run(s, combinators.Map(nc.Start(), func(*cache.NodeCache) *Observer { return o }), k)
	}
}

// deliver calls fn with ob if the leader changed (another node, by czxid,
// or nobody), or for the first observation. Executor goroutine.
func (o *Observer) deliver(ob Observation) {
	o.mu.Lock()
	same := o.has && o.latest.Leading == ob.Leading && o.latest.Token == ob.Token &&
		o.latest.Path == ob.Path && bytes.Equal(o.latest.Data, ob.Data)
	if !same {
		o.latest, o.has = ob, true
	}
	o.mu.Unlock()
	if !same {
		o.fn(ob)
	}
}

// Latest returns the observation last delivered, and false before the
// first.
func (o *Observer) Latest() (Observation, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.latest, o.has
}

// Stop returns a task that stops the observer (no more calls of fn). It
// is idempotent.
func (o *Observer) Stop() task.Task[task.Unit] { return o.stop() }

// Done is closed when the observer ends.
func (o *Observer) Done() <-chan struct{} { return o.done }

// ErrObserverStopped is Observer.Err after Stop.
var ErrObserverStopped = errors.New("election: observer stopped")

// Err is nil while the observer runs, then why it ended:
// ErrObserverStopped after Stop, task.ErrClosed once the executor's
// connection closed, or the error no retry settles.
func (o *Observer) Err() error {
	err := o.err()
	if errors.Is(err, cache.ErrStopped) {
		return ErrObserverStopped
	}
	return err
}

// Observe is the blocking face of Election.Observe and Master.Observe:
// it sends who leads
// on the returned channel, first the leader at the start, then each
// change, until ctx ends, and then closes the channel (at once, also
// while the connection is down; the observer is stopped on the executor
// when it can, and what it delivers meanwhile is dropped). The channel is
// closed before ctx ends when the observer ends for good: the executor
// closed, or an error no retry settles (task.ErrNoAuth: an operator's ACL
// refused a read; Observer.Err, which this face does not hand out). The channel holds
// one observation: a reader that falls behind gets the latest (older ones
// are replaced, never queued without bound), so the last observation
// before a pause is never lost. It returns an error, and no channel, when
// the observer cannot start (ctx ended first, the executor closed).
func (c *Client) Observe(ctx context.Context) (<-chan Observation, error) {
	if c.zero() {
		return nil, errZeroClient
	}
	ex, cand := c.ex, c.cand
	ch := make(chan Observation, 1)
	// closed: the channel is closed; send drops what comes after (a job
	// the executor had begun as it stopped, the Stop below refused).
	var mu sync.Mutex
	closed := false
	send := func(ob Observation) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		for {
			select {
			case ch <- ob:
				return
			default:
			}
			select { // full: replace the unread observation
			case <-ch:
			default:
			}
		}
	}
	// An observer that started just as ctx ended is stopped (no one else
	// could).
	o, err := blocking.Take(ctx, "election: observe", ex, cand.Observe(send), nil, func(o *Observer) {
		blocking.BackgroundAcrossExpiry(ex, nil, o.Stop())
	})
	if err != nil {
		return nil, err
	}
	park.Go(ctx, func(ctx context.Context) { // a goroutine (under a simulation, one of its actors)
		park.Wait(ctx, func() bool { return ctx.Err() != nil || park.Closed(o.Done()) })
		select {
		case <-ctx.Done():
		case <-o.Done():
		}
		// The channel is closed now and the observer stopped on the
		// executor when it can: waiting for the Stop would keep the
		// channel open as long as the connection is down (the task
		// queue is paused while the session is suspended). Until the
		// Stop has run, the executor may still run a job that sends (an
		// executor that is stopping refuses the Stop at once, too): send
		// checks closed under mu.
		blocking.BackgroundAcrossExpiry(ex, nil, o.Stop())
		mu.Lock()
		closed = true
		close(ch)
		mu.Unlock()
	})
	return ch, nil
}
