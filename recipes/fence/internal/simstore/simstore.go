// Package simstore is a key/value store with compare-and-swap for
// fakezk/sim scenarios: one store shared by the simulated clients, its
// operations taking time on the simulation's clock and recording a
// history that checkers judge.
//
// Each operation is sent by a client's executor, applied by the store a
// request latency later, and answered a reply latency after that (both
// drawn from the store's seeded source, 1ms up to Config.MaxLatency): the
// store applies operations in the order of their arrival, so clients'
// operations interleave as the seed decides. An operation is applied
// even if its flow has ended meanwhile (the request was sent); its reply
// is delivered through the client's executor, so a paused client hears it
// only when it runs on, and a flow that ended drops it. Everything runs
// on the goroutine that drives the world; nothing here is safe for
// concurrent use.
package simstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/zkflow/zkflow/recipes/fence"
	"github.com/zkflow/zkflow/task"
)

// Kind is the kind of an operation.
type Kind uint8

const (
	// Load is a read of an entry.
	Load Kind = iota + 1
	// CAS is a compare-and-swap.
	CAS
)

// Op is one operation as the store applied it.
type Op struct {
	At     time.Time
	Client int
	Kind   Kind
	Key    string
	// Entry is what a Load returned, or what a CAS would write.
	Entry fence.Entry
	// Version is the version a Load returned, or a CAS compared with.
	Version uint64
	// Swapped: the CAS went through.
	Swapped bool
}

func (o Op) String() string {
	if o.Kind == Load {
		return fmt.Sprintf("client %d load %s: token %d version %d", o.Client, o.Key, o.Entry.Token, o.Version)
	}
	return fmt.Sprintf("client %d cas %s: token %d on version %d swapped=%v", o.Client, o.Key, o.Entry.Token, o.Version, o.Swapped)
}

// Config configures a Store.
type Config struct {
	// Clock is the world's clock: requests are applied on it.
	Clock task.Clock
	// Seed seeds the latencies.
	Seed uint64
	// MaxLatency bounds each of an operation's two latencies (default
	// 20ms).
	MaxLatency time.Duration
}

// Store is the shared store.
type Store struct {
	clock   task.Clock
	rng     *rand.Rand
	max     time.Duration
	entries map[string]entry
	history []Op
}

type entry struct {
	e       fence.Entry
	version uint64
}

// New returns an empty store.
func New(cfg Config) *Store {
	if cfg.MaxLatency <= 0 {
		cfg.MaxLatency = 20 * time.Millisecond
	}
	return &Store{clock: cfg.Clock, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5354_4f52_4553_494d)), max: cfg.MaxLatency,
		entries: map[string]entry{}}
}

// History returns the operations applied, in the order applied.
func (s *Store) History() []Op { return s.history }

// Get returns the entry under key now, read directly (no latency, not
// recorded).
func (s *Store) Get(key string) fence.Entry { return s.entries[key].e }

// Client returns client i's connection to the store: a
// fence.TaskStore whose operations the history records as client i's.
func (s *Store) Client(i int) fence.TaskStore[uint64] { return client{s, i} }

func (s *Store) latency() time.Duration {
	return time.Millisecond + time.Duration(s.rng.Int64N(int64(s.max-time.Millisecond)+1))
}

type client struct {
	s *Store
	i int
}

// call sends an operation: apply runs on the store a request latency
// from now, its result goes back a reply latency later.
func call[T any](s *Store, apply func() T) task.Task[T] {
	return func(sc *task.Scope, k task.Cont[T]) {
		req, rep := s.latency(), s.latency()
		var out T
		task.Suspend(sc, k, func(resume task.Cont[T]) func() {
			s.clock.AfterFunc(req, func() { out = apply() }) // sent: applied whatever becomes of the flow
			tm := sc.Runtime().AfterFunc(sc.Now().Add(req+rep), func() {
				sc.Schedule(func() { resume(out, nil) })
			})
			return func() { tm.Stop() }
		})
	}
}

func (c client) Load(key string) task.Task[fence.Loaded[uint64]] {
	s := c.s
	return call(s, func() fence.Loaded[uint64] {
		en := s.entries[key]
		e := fence.Entry{Value: slices.Clone(en.e.Value), Token: en.e.Token}
		s.history = append(s.history, Op{At: s.clock.Now(), Client: c.i, Kind: Load, Key: key, Entry: e, Version: en.version})
		return fence.Loaded[uint64]{Entry: e, Version: en.version}
	})
}

func (c client) CompareAndSwap(key string, old uint64, e fence.Entry) task.Task[bool] {
	s := c.s
	e = fence.Entry{Value: slices.Clone(e.Value), Token: e.Token}
	return call(s, func() bool {
		en := s.entries[key]
		ok := en.version == old
		if ok {
			s.entries[key] = entry{e: e, version: old + 1}
		}
		s.history = append(s.history, Op{At: s.clock.Now(), Client: c.i, Kind: CAS, Key: key, Entry: e, Version: old, Swapped: ok})
		return ok
	})
}

// CheckTokenOrder judges the history: on every key, the tokens of the
// compare-and-swaps that went through never go down, so once a holder
// has written a key no holder with a lower token writes it again. It
// returns the number of writes that went through and the first
// violation.
func (s *Store) CheckTokenOrder() (writes int, err error) {
	high := map[string]Op{}
	for _, op := range s.history {
		if op.Kind != CAS || !op.Swapped {
			continue
		}
		writes++
		if h, ok := high[op.Key]; ok && op.Entry.Token < h.Entry.Token {
			return writes, fmt.Errorf("key %s: token %d written at %s (%s) after token %d wrote it at %s (%s)",
				op.Key, op.Entry.Token, op.At.Format("15:04:05.000"), op, h.Entry.Token, h.At.Format("15:04:05.000"), h)
		}
		high[op.Key] = op
	}
	return writes, nil
}

// Wrote reports whether a write with token went through on key.
func (s *Store) Wrote(key string, token int64) bool {
	for _, op := range s.history {
		if op.Kind == CAS && op.Swapped && op.Key == key && op.Entry.Token == token {
			return true
		}
	}
	return false
}
