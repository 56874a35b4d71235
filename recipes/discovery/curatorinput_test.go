package discovery_test

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

// Register: "a payload that is not JSON [fails] with [an error] wrapping
// task.ErrInvalidArgument", and a Curator ServiceDiscovery sees the
// instances this package registers. A payload holding bytes that are not
// UTF-8 (`"a\xffb"`) passes json.Valid, which does not look at the bytes
// inside a string, and was written as is into the node; JSON is UTF-8
// (RFC 8259, 8.1), and Curator's Jackson refuses such data ("Invalid
// UTF-8 start byte"), so that its queryForInstances of the service
// failed as a whole, every other instance with it. Likewise a port Java's
// Integer cannot hold (Jackson: "out of range of int"). Such an instance
// is refused now: MarshalJSON with ErrInvalidInstance, Register with
// task.ErrInvalidArgument, and no node is made.
func TestRegisterRefusesWhatCuratorCannotRead(t *testing.T) {
	w := newTestWorld(t, 1, 1)
	d, _ := discovery.New("/services")
	cases := map[string]discovery.Instance{
		"payload not UTF-8":        {Name: "web", ID: "a", Payload: json.RawMessage("\"a\xffb\"")},
		"payload object not UTF-8": {Name: "web", ID: "b", Payload: json.RawMessage("{\"k\":\"\xc3\"}"), PayloadClass: "java.util.HashMap"},
	}
	if strconv.IntSize == 64 {
		over := int64(math.MaxInt32) + 1
		cases["port over Java's int"] = discovery.Instance{Name: "web", ID: "c", Port: int(over)}
		cases["ssl port under Java's int"] = discovery.Instance{Name: "web", ID: "d", SSLPort: int(-over - 1), ServiceType: discovery.Static}
	}
	for name, in := range cases {
		if _, err := json.Marshal(in); !errors.Is(err, discovery.ErrInvalidInstance) {
			t.Errorf("%s: Marshal = %v, want ErrInvalidInstance", name, err)
		}
		if _, err := sim.Run(w, 0, d.Register(in)); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("%s: Register = %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, ok := w.NodeStat("/services"); ok {
		t.Error("a refused Register made /services")
	}
	// What Curator reads is still written: UTF-8 beyond ASCII, Java's
	// int at both ends, negative ports.
	for _, in := range []discovery.Instance{
		{Name: "web", ID: "e", Payload: json.RawMessage(`"h\u00e9 \u2028"`), Port: math.MaxInt32, SSLPort: math.MinInt32},
		{Name: "web", ID: "f", Payload: json.RawMessage(`{"k":"é"}`), PayloadClass: "java.util.HashMap", Port: -1},
	} {
		r, err := sim.Run(w, 0, d.Register(in))
		if err != nil {
			t.Fatalf("%s: Register = %v", in.ID, err)
		}
		data, _, _ := w.NodeData(r.Path())
		got, err := discovery.ParseInstance(data)
		if err != nil || got.Port != in.Port || got.SSLPort != in.SSLPort {
			t.Errorf("%s: read back %+v, %v", in.ID, got, err)
		}
	}
}
