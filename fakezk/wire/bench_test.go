package wire_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// BenchmarkGoZookeeper measures go-zookeeper's get and set against fakezk
// on the wire (fake) and against Debian's ZooKeeper 3.8.0 (real: skipped
// without java), one goroutine and 16*GOMAXPROCS goroutines on one client
// connection:
//
//	go test -run '^$' -bench GoZookeeper -benchmem ./fakezk/wire
func BenchmarkGoZookeeper(b *testing.B) {
	b.Run("fake", func(b *testing.B) {
		benchOps(b, start(b, fakezk.Config{}))
	})
	b.Run("real", func(b *testing.B) {
		srv := zkserver.Standalone(b, zkserver.Options{Throughput: true})
		benchOps(b, &rig{addr: srv.Addrs()[0]})
	})
}

func benchOps(b *testing.B, r *rig) {
	c, _ := r.dialTB(b)
	if _, err := c.Create("/bench", []byte("0123456789"), 0, open); err != nil {
		b.Fatal(err)
	}
	b.Run("get", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := c.Get("/bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("set", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.Set("/bench", []byte("0123456789"), -1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get-parallel", func(b *testing.B) {
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, _, err := c.Get("/bench"); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("set-parallel", func(b *testing.B) {
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Set("/bench", []byte("0123456789"), -1); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
