package discovery_test

import (
	"fmt"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
)

// BenchmarkProviderGet: one lookup through a round-robin provider over a
// started cache of 8 instances (no request to the server: the cost is
// the lookup's own).
//
//	go test -run '^$' -bench BenchmarkProviderGet -benchmem ./recipes/discovery
func BenchmarkProviderGet(b *testing.B) {
	w, err := sim.New(sim.Config{Seed: 1, Clients: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	d, _ := discovery.New("/services")
	for k := range 8 {
		if _, err := sim.Run(w, 0, d.Register(discovery.Instance{Name: "web", ID: fmt.Sprintf("i%d", k), Port: 80})); err != nil {
			b.Fatal(err)
		}
	}
	c, _ := d.NewCache("web")
	if _, err := sim.Run(w, 0, c.Start()); err != nil {
		b.Fatal(err)
	}
	p, _ := discovery.NewProvider(c.Instances, w.Clock)
	if n := len(c.Instances()); n != 8 {
		b.Fatalf("cache holds %d instances", n)
	}
	for b.Loop() {
		if _, err := p.Get(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseInstance: one Curator ServiceInstance read from a node's
// data, as a cache does for every instance that changed.
//
//	go test -run '^$' -bench BenchmarkParseInstance -benchmem ./recipes/discovery
func BenchmarkParseInstance(b *testing.B) {
	data := []byte(`{"name":"web","id":"4f1c6b2e-7d1a-4c3e-9a55-0b7c1d2e3f40","address":"10.0.0.7","port":8080,` +
		`"sslPort":null,"payload":{"@class":"org.example.Meta","zone":"a"},"registrationTimeUTC":1700000000000,` +
		`"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`)
	for b.Loop() {
		if _, err := discovery.ParseInstance(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseInstancePlain: an instance as Register writes one with no
// payload and no URI spec (read without reflection).
//
//	go test -run '^$' -bench BenchmarkParseInstancePlain -benchmem ./recipes/discovery
func BenchmarkParseInstancePlain(b *testing.B) {
	data := []byte(`{"name":"web","id":"4f1c6b2e-7d1a-4c3e-9a55-0b7c1d2e3f40","address":"10.0.0.7","port":8080,` +
		`"sslPort":null,"payload":null,"registrationTimeUTC":1700000000000,` +
		`"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`)
	for b.Loop() {
		if _, err := discovery.ParseInstance(data); err != nil {
			b.Fatal(err)
		}
	}
}
