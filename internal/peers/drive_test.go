package peers

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestDriveOps(t *testing.T) {
	calls := make([]int, 3)
	var last atomic.Int64
	r, err := Drive(context.Background(), Load{Workers: 3, Ops: 50,
		Op: func(_ context.Context, w int) error { calls[w]++; return nil },
		Done: func(n int64) {
			for {
				if cur := last.Load(); n <= cur || last.CompareAndSwap(cur, n) {
					return
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops != 150 || r.Total != 150 || r.Errors != 0 || last.Load() != 150 {
		t.Fatalf("ops %d total %d errors %d progress %d, want 150 150 0 150", r.Ops, r.Total, r.Errors, last.Load())
	}
	for w, n := range calls {
		if n != 50 {
			t.Errorf("worker %d called %d times, want 50", w, n)
		}
	}
	if len(r.Latency) != len(Quantiles) || r.Seconds <= 0 {
		t.Fatalf("latency %v seconds %v", r.Latency, r.Seconds)
	}
}

// Failures are counted, not measured; a worker whose operations keep
// failing ends the run with an error instead of spinning.
func TestDriveErrors(t *testing.T) {
	boom := errors.New("boom")
	n := 0
	r, err := Drive(context.Background(), Load{Workers: 1, Ops: 10, Op: func(context.Context, int) error {
		n++
		if n%2 == 0 {
			return boom
		}
		return nil
	}})
	if err != nil || r.Ops != 10 || r.Errors != 9 {
		t.Fatalf("Drive = %+v, %v; want 10 ops and 9 errors", r, err)
	}
	_, err = Drive(context.Background(), Load{Workers: 2, Ops: 10, MaxErrors: 5, Op: func(context.Context, int) error { return boom }})
	if !errors.Is(err, ErrTooManyErrors) || !errors.Is(err, boom) {
		t.Fatalf("always failing: %v, want ErrTooManyErrors wrapping the last error", err)
	}
}

func TestDriveCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := Drive(ctx, Load{Workers: 1, Ops: 1 << 30, Op: func(context.Context, int) error {
		if n++; n == 100 {
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) || n != 100 {
		t.Fatalf("Drive after cancel = %v after %d ops, want context.Canceled after 100", err, n)
	}
}

func TestDriveBadLoad(t *testing.T) {
	op := func(context.Context, int) error { return nil }
	for _, l := range []Load{
		{Workers: 0, Ops: 1, Op: op},
		{Workers: 1, Ops: 1},
		{Workers: 1, Op: op},
		{Workers: 1, Ops: -1, Op: op},
		{Workers: 1, Ops: 1, Warmup: -1, Op: op},
		{Workers: 1, Duration: -1, Op: op},
	} {
		if _, err := Drive(context.Background(), l); !errors.Is(err, ErrBadParams) {
			t.Errorf("Drive(%+v) = %v, want ErrBadParams", l, err)
		}
	}
}
