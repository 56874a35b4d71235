package seqid_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// running starts an executor on a new session of srv, run by a goroutine
// of its own until the test ends.
func running(t *testing.T, srv *fakezk.Server) (*executor.Executor, *fakezk.Conn) {
	conn := srv.Connect(fakezk.ConnConfig{})
	ex, err := executor.New(executor.Config{Conn: conn, Clock: srv.Clock(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ex.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ex, conn
}

func TestNewClientErrors(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	ex, _ := running(t, srv)
	for _, tc := range []struct {
		name  string
		ex    *executor.Executor
		block int64
		err   error
	}{
		{"nil executor", nil, 1, task.ErrInvalidArgument},
		{"zero block", ex, 0, seqid.ErrBadCount},
		{"negative block", ex, -5, seqid.ErrBadCount},
	} {
		if _, err := seqid.NewClient(tc.ex, path, tc.block); !errors.Is(err, tc.err) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		}
	}
}

// With blocks, a generator's first call reserves a whole block: another
// client's next ID comes after it, and the generator's next IDs come from
// the block in hand.
func TestGeneratorReservesBlocks(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	ex1, _ := running(t, srv)
	ex2, _ := running(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	blocks, err := seqid.NewClient(ex1, path, 10)
	if err != nil {
		t.Fatal(err)
	}
	single, err := seqid.NewClient(ex2, path, 1)
	if err != nil {
		t.Fatal(err)
	}
	first, err := blocks.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := single.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if other < first+10 {
		t.Errorf("after a block from %d, another client drew %d: the block was not reserved whole", first, other)
	}
	if next, err := blocks.Next(ctx); err != nil || next != first+1 {
		t.Errorf("the generator's second ID = %d, %v; want %d from its block", next, err, first+1)
	}
}

// Goroutines share generators on two sessions, one drawing by CAS and one
// from blocks; a session expires in the middle. Every call gets an ID and
// none is repeated.
func TestGeneratorConcurrent(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	ex1, conn1 := running(t, srv)
	ex2, _ := running(t, srv)
	g1, err := seqid.NewClient(ex1, path, 1)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := seqid.NewClient(ex2, path, 10)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	const workers, each = 8, 40
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		g := g1
		if w%2 == 1 {
			g = g2
		}
		wg.Go(func() {
			var last int64
			for range each {
				id, err := g.Next(ctx)
				if err != nil {
					errs <- err
					return
				}
				if id <= last {
					errs <- errors.New("ids of one goroutine not increasing")
				}
				last = id
				mu.Lock()
				seen[id]++
				mu.Unlock()
			}
		})
	}
	srv.Expire(conn1)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(seen) != workers*each {
		t.Fatalf("%d distinct ids, want %d", len(seen), workers*each)
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("id %d handed out %d times", id, n)
		}
	}
}

func TestGeneratorContext(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	ex, _ := running(t, srv)
	g, _ := seqid.NewClient(ex, path, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled context: %v", err)
	}
	if id, err := g.Next(context.Background()); err != nil || id < 1 {
		t.Fatalf("after a canceled call: %d, %v", id, err)
	}
}

// Next's doc: an error once the executor closes, with blocks once the
// block in hand (reserved already, this Client's) is used up. The IDs of
// that block are still handed out after Close, in order; the next call
// after them fails with task.ErrClosed and reserves nothing.
func TestNextAfterCloseUsesUpTheBlockInHand(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	ex, _ := running(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g, err := seqid.NewClient(ex, path, 4)
	if err != nil {
		t.Fatal(err)
	}
	first, err := g.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ex.Close()
	for i := int64(1); i < 4; i++ {
		if id, err := g.Next(ctx); err != nil || id != first+i {
			t.Fatalf("after Close, ID %d of the block in hand = %d, %v; want %d", i, id, err, first+i)
		}
	}
	if id, err := g.Next(ctx); !errors.Is(err, task.ErrClosed) {
		t.Fatalf("after Close, with the block used up: %d, %v; want task.ErrClosed", id, err)
	}
}
