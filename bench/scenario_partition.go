package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/recipes/partition"
)

// The partition scenario, against kazoo's SetPartitioner: the time a set
// takes to be divided again when a member joins and when it leaves. Its
// group "partition" is not in -scenarios all nor in recipes; make bench
// runs it on its own (-scenarios partition) into the README section
// "partition". The kazoo peer implements the same name (kazoo_peer.py,
// rebalance_op) with the same rules: rebalanceItems items, two members
// that stay ("m1", "m2") and the measured client's member "m0", the
// stability wait rebalanceStable (kazoo's time_boundary), and an
// operation that is a join then a leave of m0, each waited for until
// every member holds the share kazoo's division gives it (and nothing
// else).

const (
	// rebalanceItems is the size of the set.
	rebalanceItems = 12
	// rebalanceStable is the partition's WithStable and kazoo's time_boundary.
	rebalanceStable = 100 * time.Millisecond
)

func init() {
	register(&scenario{
		Name:  "rebalance",
		Title: fmt.Sprintf("set of %d divided again when a third member joins, then leaves; Stable (time_boundary) %v (recipes/partition Client)", rebalanceItems, rebalanceStable),
		Unit:  "join+leave cycles/s",
		// One client: the member that joins and leaves; the two that stay
		// have sessions of their own, not counted.
		Clients: []int{1}, Peers: []peers.Kind{peers.Kazoo}, Run: rebalanceRun, Group: "partition",
	})
}

// rebalanceMember is a member of the scenario and the channel its
// changes are signalled on.
type rebalanceMember struct {
	c       *partition.Client
	m       *partition.Member
	id      string
	changed chan struct{}
}

func (rm *rebalanceMember) join(ctx context.Context) error {
	m, err := rm.c.Join(ctx, rm.id, func(partition.Change) {
		select {
		case rm.changed <- struct{}{}:
		default:
		}
	})
	rm.m = m
	return err
}

// rebalanced waits until every member of ms is Acquired with the share
// KazooAssign gives it among ms.
func rebalanced(ctx context.Context, ms []*rebalanceMember, items []string) error {
	var ids []string
	for _, rm := range ms {
		ids = append(ids, rm.id)
	}
	slices.Sort(ids)
	for {
		var waitOn *rebalanceMember
		for _, rm := range ms {
			var got []string
			for _, h := range rm.m.Held() {
				got = append(got, h.Item)
			}
			if rm.m.State() != partition.Acquired || !slices.Equal(got, partition.KazooAssign(rm.id, ids, items)) {
				waitOn = rm
				break
			}
		}
		if waitOn == nil {
			return nil
		}
		select {
		case <-waitOn.changed:
		case <-ctx.Done():
			return fmt.Errorf("rebalance: waiting for %v to divide the set: %w", ids, ctx.Err())
		}
	}
}

func rebalanceRun(ctx context.Context, r runSpec) (measured, error) {
	items := make([]string, rebalanceItems)
	for i := range items {
		items[i] = fmt.Sprintf("item-%02d", i)
	}
	cs, err := dialClients(ctx, r.Addr, r.Clients, r.SessionTimeout)
	if err != nil {
		return measured{}, err
	}
	defer cs.close()
	stay, err := dialClients(ctx, r.Addr, 2, r.SessionTimeout)
	if err != nil {
		return measured{}, err
	}
	defer stay.close()
	member := func(ex *executor.Executor, id string) (*rebalanceMember, error) {
		c, err := partition.NewClient(ex, r.Path, items, partition.WithStable(rebalanceStable))
		return &rebalanceMember{c: c, id: id, changed: make(chan struct{}, 1)}, err
	}
	var staying []*rebalanceMember
	for i, ex := range stay.Execs {
		rm, err := member(ex, fmt.Sprintf("m%d", i+1))
		if err == nil {
			err = rm.join(ctx)
		}
		if err != nil {
			return measured{}, err
		}
		staying = append(staying, rm)
	}
	if err := rebalanced(ctx, staying, items); err != nil {
		return measured{}, err
	}
	mover, err := member(cs.Execs[0], "m0")
	if err != nil {
		return measured{}, err
	}
	all := append([]*rebalanceMember{mover}, staying...)
	before := cs.Requests.Load() + stay.Requests.Load()
	res, err := peers.Drive(ctx, peers.Load{Workers: 1, Warmup: r.Warmup, Duration: r.Duration, Done: r.Done,
		Op: func(ctx context.Context, _ int) error {
			if err := mover.join(ctx); err != nil {
				return err
			}
			if err := rebalanced(ctx, all, items); err != nil {
				return err
			}
			if err := mover.c.Leave(ctx, mover.m); err != nil {
				return err
			}
			return rebalanced(ctx, staying, items)
		}})
	m := measured{Result: res, Requests: cs.Requests.Load() + stay.Requests.Load() - before}
	for _, rm := range staying {
		if lerr := rm.c.Leave(ctx, rm.m); lerr != nil && err == nil {
			err = lerr
		}
	}
	return m, err
}
