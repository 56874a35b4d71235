package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/peers"
	zkconfig "github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/task"
)

func init() {
	register(&scenario{
		Name: "config", Title: "config write-to-handler (recipes/config Watch: one writer, N readers)", Unit: "updates/s",
		Clients: []int{1, 8}, Run: configRun,
	})
}

// configRun: r.Clients readers, each on a session of its own, follow one
// node with config.Watch; a writer on another session sets the node to
// 1, 2, 3 ..., each time waiting until every reader's handler has been
// called with that value. An operation is one update, its latency from
// the start of the write to the last reader's handler; round trips are
// everyone's, the writer's and the readers'.
func configRun(ctx context.Context, r runSpec) (measured, error) {
	cs, err := dialClients(ctx, r.Addr, 1+r.Clients, r.SessionTimeout)
	if err != nil {
		return measured{}, err
	}
	defer cs.close()
	writer := cs.Execs[0]
	if err := ensurePath(ctx, writer, r.Path); err != nil {
		return measured{}, err
	}
	seen := make([]atomic.Int64, r.Clients)
	notify := make(chan struct{}, 1)
	for i, ex := range cs.Execs[1:] {
		w, err := executor.Await(ctx, ex, zkconfig.Watch(r.Path, func(s zkconfig.Snapshot) {
			if len(s.Data) == 8 {
				seen[i].Store(int64(binary.BigEndian.Uint64(s.Data)))
				select {
				case notify <- struct{}{}:
				default:
				}
			}
		}))
		if err != nil {
			return measured{}, fmt.Errorf("watch: %w", err)
		}
		defer executor.Await(context.WithoutCancel(ctx), ex, w.Stop())
	}
	var seq int64
	before := cs.Requests.Load()
	res, err := peers.Drive(ctx, peers.Load{Workers: 1, Warmup: r.Warmup, Duration: r.Duration, Done: r.Done,
		Op: func(ctx context.Context, _ int) error {
			seq++
			if _, err := executor.Await(ctx, writer, task.Set(r.Path, binary.BigEndian.AppendUint64(nil, uint64(seq)), task.AnyVersion)); err != nil {
				return err
			}
			for {
				all := true
				for i := range seen {
					all = all && seen[i].Load() >= seq
				}
				if all {
					return nil
				}
				select {
				case <-notify:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}})
	return measured{Result: res, Requests: cs.Requests.Load() - before}, err
}
