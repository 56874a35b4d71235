package config

import (
	"errors"
	"testing"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// putCPS is put as it was written before it became a flow, with
// continuations, kept for BenchmarkPut.
func putCPS(path string, data []byte, acl task.ACLProvider) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		var attempt func()
		attempt = func() {
			task.Run(s, c.Retry(task.Set(path, data, task.AnyVersion), retry), func(_ task.Stat, err error) {
				if !errors.Is(err, task.ErrNoNode) {
					k(task.Unit{}, err)
					return
				}
				task.Run(s, c.Retry(zkops.Create(path, data, task.Persistent, acl), retry), func(_ string, err error) {
					if errors.Is(err, task.ErrNodeExists) {
						attempt()
						return
					}
					k(task.Unit{}, err)
				})
			})
		}
		attempt()
	}
}

// The cost of put as a flow against the same steps with continuations,
// on fakezk (automatic mode: the server's work is in the figure too):
// a set of an existing node, and a create after the set's NoNode.
//
//	go test -run '^$' -bench Put -benchmem ./recipes/config/
func BenchmarkPut(b *testing.B) {
	for _, v := range []struct {
		name string
		put  func(string, []byte, task.ACLProvider) task.Task[task.Unit]
	}{{"flow", put}, {"continuations", putCPS}} {
		for _, create := range []bool{false, true} {
			name := v.name + "/set"
			if create {
				name = v.name + "/create"
			}
			b.Run(name, func(b *testing.B) {
				srv := fakezk.New(fakezk.Config{})
				ex, _ := executor.New(executor.Config{Conn: srv.Connect(fakezk.ConnConfig{})})
				defer ex.Shutdown()
				executor.Submit(ex, task.Create("/p", nil, task.Persistent), nil)
				ex.RunUntilIdle()
				var err error
				k := func(_ task.Unit, e error) { err = e }
				b.ReportAllocs()
				cpu0 := cpuTime()
				for b.Loop() {
					if create {
						executor.Submit(ex, task.Delete("/p", task.AnyVersion), nil)
					}
					executor.Submit(ex, v.put("/p", []byte("v"), nil), k)
					ex.RunUntilIdle()
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
