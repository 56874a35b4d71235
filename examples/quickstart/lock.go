package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// lockChapter: every worker runs critical sections under one lock. Inside,
// it reads a counter and writes counter+1 through the lock's fenced write:
// one multi that also checks the lock node, so ZooKeeper itself refuses
// the write of a holder that has lost the lock. On the embedded server a
// holder's connection drops and another's session expires mid-run.
//
// The judge is the counter: every accepted write moved it by exactly one,
// and in the order of the counter's values the fencing tokens never go
// down, so no two holders' sections interleaved.
func lockChapter(ctx context.Context, s *story) error {
	dir, counter := s.root+"/lock", s.root+"/counter"
	if err := s.mkdir(ctx, dir); err != nil {
		return err
	}
	if _, err := executor.Await(ctx, s.admin.ex, task.Create(counter, encode(0), task.Persistent)); err != nil && !errors.Is(err, task.ErrNodeExists) {
		return err
	}

	type write struct {
		value, token int64
		worker       string
	}
	var (
		mu      sync.Mutex
		writes  []write
		refused int
		lost    int
		unknown int // fenced writes whose outcome connection loss hid
		entered int
	)
	total := len(s.workers) * s.o.sections
	err := s.eachWorker(func(i int, w *process) error {
		m, err := lock.NewClient(w.ex, dir)
		if err != nil {
			return err
		}
		for done := 0; done < s.o.sections; {
			held, err := m.Acquire(ctx)
			if errors.Is(err, task.ErrSessionExpired) {
				continue
			}
			if err != nil {
				return err
			}
			mu.Lock()
			entered++
			n := entered
			mu.Unlock()
			switch n {
			case total / 3:
				s.fault(w, "connection drop while holding the lock", drop(false))
			case 2 * total / 3:
				s.fault(w, "session expiry while holding the lock", expire)
			}
			v, err := executor.AwaitAcrossExpiry(ctx, w.ex, task.Get(counter))
			if err != nil {
				return err
			}
			next := decode(v.Data) + 1
			_, err = m.Fenced(ctx, held, task.SetOp(counter, encode(next), v.Stat.Version))
			switch {
			case err == nil:
				mu.Lock()
				writes = append(writes, write{next, held.Token(), w.name})
				mu.Unlock()
				done++
			case errors.Is(err, lock.ErrLockLost):
				mu.Lock()
				refused++
				mu.Unlock()
			case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrSessionExpired):
				// The outcome is unknown: the write may have applied.
				mu.Lock()
				unknown++
				mu.Unlock()
			default:
				return err
			}
			if err := m.Release(ctx, held); err != nil { // a lost lock's release succeeds: its node is gone
				return err
			}
			if errors.Is(held.Err(), lock.ErrLockLost) {
				mu.Lock()
				lost++
				mu.Unlock()
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	final, err := executor.AwaitAcrossExpiry(ctx, s.admin.ex, task.Get(counter))
	if err != nil {
		return err
	}
	sort.Slice(writes, func(a, b int) bool { return writes[a].value < writes[b].value })
	// Accepted writes have distinct values (each checked the counter's
	// version), the only gaps are writes whose outcome was hidden, and
	// tokens never go down.
	ordered, gaps := "", 0
	for k := range writes {
		prev := int64(0)
		if k > 0 {
			prev = writes[k-1].value
		}
		if writes[k].value == prev && ordered == "" {
			ordered = fmt.Sprintf("value %d written twice", prev)
		}
		gaps += int(writes[k].value - prev - 1)
		if k > 0 && writes[k].token < writes[k-1].token && ordered == "" {
			ordered = fmt.Sprintf("token went down at write %d (%s after %s)", writes[k].value, writes[k].worker, writes[k-1].worker)
		}
	}
	s.progress("%d sections, %d fenced writes accepted, %d refused, %d locks lost", entered, len(writes), refused, lost)
	if gaps > unknown && ordered == "" {
		ordered = fmt.Sprintf("%d counter values skipped, only %d writes had unknown outcomes", gaps, unknown)
	}
	s.check(ordered == "" && decode(final.Data) >= int64(len(writes)),
		"lock holders never overlapped: %d fenced writes in token order, counter at %d%s, %d late writes refused by ZooKeeper",
		len(writes), decode(final.Data), dupNote(ordered), refused)
	return nil
}

func encode(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func decode(b []byte) int64 {
	if len(b) < 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}
