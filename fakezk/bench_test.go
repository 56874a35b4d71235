package fakezk_test

import (
	"testing"
	"time"

	bclock "github.com/benbjohnson/clock"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

func benchConn(b *testing.B) (*fakezk.Server, *fakezk.Conn) {
	srv := fakezk.New(fakezk.Config{})
	c := srv.Connect(fakezk.ConnConfig{})
	if err := c.Start(func(task.Event) {}); err != nil {
		b.Fatal(err)
	}
	return srv, c
}

// BenchmarkOps measures simple operations through a Conn in automatic mode
// (the server applies each in Do and calls done before Do returns).
func BenchmarkOps(b *testing.B) {
	_, c := benchConn(b)
	done := func(r task.Response) {
		if r.Err != nil {
			panic(r.Err)
		}
	}
	c.Do(&task.CreateRequest{Path: "/bench", Data: []byte("x"), ACL: task.OpenACL}, done, nil)
	b.Run("exists", func(b *testing.B) {
		req := &task.ExistsRequest{Path: "/bench"}
		for b.Loop() {
			c.Do(req, done, nil)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
	b.Run("get", func(b *testing.B) {
		req := &task.GetDataRequest{Path: "/bench"}
		for b.Loop() {
			c.Do(req, done, nil)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
	b.Run("set", func(b *testing.B) {
		req := &task.SetDataRequest{Path: "/bench", Data: []byte("y"), Version: -1}
		for b.Loop() {
			c.Do(req, done, nil)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
	b.Run("create-delete", func(b *testing.B) {
		cr := &task.CreateRequest{Path: "/bench/n", ACL: task.OpenACL}
		del := &task.DeleteRequest{Path: "/bench/n", Version: -1}
		for b.Loop() {
			c.Do(cr, done, nil)
			c.Do(del, done, nil)
		}
		b.ReportMetric(2*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
	b.Run("get-watch-set", func(b *testing.B) {
		get := &task.GetDataRequest{Path: "/bench", Watch: true}
		set := &task.SetDataRequest{Path: "/bench", Version: -1}
		w := func(task.Event) {}
		for b.Loop() {
			c.Do(get, done, w)
			c.Do(set, done, nil)
		}
		b.ReportMetric(2*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	})
}

// BenchmarkDeterministicOps measures an op plus the two Steps that apply
// and deliver it in deterministic mode.
func BenchmarkDeterministicOps(b *testing.B) {
	srv := fakezk.New(fakezk.Config{Deterministic: true})
	c := srv.Connect(fakezk.ConnConfig{})
	c.Start(func(task.Event) {})
	srv.RunUntilIdle()
	req := &task.ExistsRequest{Path: "/"}
	done := func(task.Response) {}
	for b.Loop() {
		c.Do(req, done, nil)
		srv.Step()
		srv.Step()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkClockAdvance compares advancing the simulation clock by one
// timer with github.com/benbjohnson/clock's Mock.Add, which sleeps a
// millisecond of real time per call.
func BenchmarkClockAdvance(b *testing.B) {
	b.Run("fakezk.Clock", func(b *testing.B) {
		clk := fakezk.NewClock(time.Time{})
		f := func() {}
		for b.Loop() {
			clk.AfterFunc(time.Millisecond, f)
			clk.Advance(time.Millisecond)
		}
	})
	b.Run("benbjohnson.Mock", func(b *testing.B) {
		clk := bclock.NewMock()
		f := func() {}
		for b.Loop() {
			clk.AfterFunc(time.Millisecond, f)
			clk.Add(time.Millisecond)
		}
	})
}
