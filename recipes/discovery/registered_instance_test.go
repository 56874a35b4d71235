package discovery_test

import (
	"bytes"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
)

// Registration.Instance: "the instance as registered". Register used to
// keep the caller's Payload and URISpec themselves: a caller reusing its
// buffer after Register (or changing the URI spec for the next
// registration) changed what Instance reported, while the node kept what
// was registered. Instance now holds copies of its own, as Query's and
// Provider.Get's instances are the caller's.
func TestRegistrationInstanceIsAsRegistered(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	d, _ := discovery.New("/services")
	for _, typ := range []discovery.ServiceType{discovery.Dynamic, discovery.Static} {
		buf := []byte(`{"v":1}`)
		spec := &discovery.URISpec{Parts: []discovery.URIPart{{Value: "http://"}}}
		in := discovery.Instance{Name: "web", ID: "a" + string(typ), Payload: buf, URISpec: spec, ServiceType: typ}
		r, err := sim.Run(w, 0, d.Register(in))
		if err != nil {
			t.Fatal(err)
		}
		copy(buf, `{"v":2}`)
		spec.Parts[0].Value = "https://"
		data, _, _ := w.NodeData(r.Path())
		node, err := discovery.ParseInstance(data)
		if err != nil {
			t.Fatal(err)
		}
		got := r.Instance()
		if !bytes.Equal(got.Payload, node.Payload) || got.URISpec.Parts[0] != node.URISpec.Parts[0] {
			t.Errorf("%s: Instance() has payload %s, URI spec %+v; the node, as registered, %s, %+v",
				typ, got.Payload, got.URISpec.Parts, node.Payload, node.URISpec.Parts)
		}
	}
}
