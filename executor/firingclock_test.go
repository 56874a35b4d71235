package executor_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// firingClock is a fakezk.Clock that also has AfterFire and
// AfterFireBackground (the executor hands such a clock its timers rather
// than functions), counting the calls of each kind.
type firingClock struct {
	*fakezk.Clock
	funcs, fires int
}

func (c *firingClock) AfterFunc(d time.Duration, f func()) task.Timer {
	c.funcs++
	return c.Clock.AfterFunc(d, f)
}

func (c *firingClock) AfterFuncBackground(d time.Duration, f func()) task.Timer {
	c.funcs++
	return c.Clock.AfterFuncBackground(d, f)
}

func (c *firingClock) AfterFire(d time.Duration, f interface{ Fire() }) task.Timer {
	c.fires++
	return c.Clock.AfterFunc(d, f.Fire)
}

func (c *firingClock) AfterFireBackground(d time.Duration, f interface{ Fire() }) task.Timer {
	c.fires++
	return c.Clock.AfterFuncBackground(d, f.Fire)
}

// On a clock with AfterFire, the executor's timers go through it: they
// fire in time order from the event queue, a stopped one does not, and
// AfterFuncBackground's are background ones.
func TestTimersOnAFiringClock(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	t.Cleanup(func() { srv.Close() })
	clk := &firingClock{Clock: fakezk.NewClock(time.Time{})}
	ex, err := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{}), Clock: clk, OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close(); ex.RunUntilIdle() })
	ex.RunUntilIdle()

	var got []string
	stopped := true
	arm := task.Func(func(s *task.Scope) (task.Unit, error) {
		rt := s.Runtime()
		now := s.Now()
		rt.AfterFunc(now.Add(2*time.Second), func() { got = append(got, "2s") })
		rt.AfterFunc(now.Add(time.Second), func() { got = append(got, "1s") })
		stop := rt.AfterFunc(now.Add(time.Second), func() { got = append(got, "stopped") })
		stopped = stop.Stop() && !stop.Stop()
		bg := rt.(interface {
			AfterFuncBackground(time.Time, func()) task.Timer
		})
		bg.AfterFuncBackground(now.Add(3*time.Second), func() { got = append(got, "3s bg") })
		return task.Unit{}, nil
	})
	var armErr error
	done := false
	executor.Submit(ex, arm, func(_ task.Unit, err error) { armErr, done = err, true })
	ex.RunUntilIdle()
	if !done || armErr != nil {
		t.Fatalf("arming flow: done %v, err %v", done, armErr)
	}
	if !stopped {
		t.Fatal("Stop of a pending timer: want true, then false")
	}
	if clk.fires != 4 || clk.funcs != 0 {
		t.Fatalf("clock calls: %d AfterFire(Background), %d AfterFunc(Background); want 4 and 0", clk.fires, clk.funcs)
	}
	if n := clk.Pending(); n != 2 {
		t.Fatalf("pending timers: %d, want 2 (the background one not counted)", n)
	}
	for clk.AdvanceToNext() {
		ex.RunUntilIdle()
	}
	clk.Advance(time.Second)
	ex.RunUntilIdle()
	want := []string{"1s", "2s", "3s bg"}
	if len(got) != len(want) {
		t.Fatalf("fired %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("fired %q, want %q", got, want)
		}
	}
}
