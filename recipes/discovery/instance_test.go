package discovery_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/zkflow/zkflow/recipes/discovery"
)

// An instance is written field for field in the order and form Curator's
// Jackson writes a ServiceInstance: ports 0 as null, the payload's class
// as its first "@class" member, "enabled" included.
func TestInstanceWritesCuratorJSON(t *testing.T) {
	in := discovery.Instance{Name: "web", ID: "w1", Address: "10.0.0.1", Port: 8080,
		Payload: json.RawMessage(`{"val":"x"}`), PayloadClass: "java.util.HashMap", RegistrationTimeUTC: 1700000000000,
		URISpec: &discovery.URISpec{Parts: []discovery.URIPart{{Value: "scheme", Variable: true}, {Value: "://", Variable: false}}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"web","id":"w1","address":"10.0.0.1","port":8080,"sslPort":null,` +
		`"payload":{"@class":"java.util.HashMap","val":"x"},"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC",` +
		`"uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false}]},"enabled":true}`
	if string(b) != want {
		t.Fatalf("wrote\n%s\nwant\n%s", b, want)
	}
	back, err := discovery.ParseInstance(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.PayloadClass != "java.util.HashMap" || back.Port != 8080 || back.SSLPort != 0 || back.Disabled || back.URISpec == nil || len(back.URISpec.Parts) != 2 {
		t.Fatalf("read back %+v", back)
	}
	// No payload: null; an empty object with a class keeps only the class.
	b, _ = json.Marshal(discovery.Instance{Name: "n", ID: "i"})
	if want := `{"name":"n","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":0,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`; string(b) != want {
		t.Fatalf("wrote %s, want %s", b, want)
	}
	b, _ = json.Marshal(discovery.Instance{Name: "n", ID: "i", Payload: json.RawMessage(`{ }`), PayloadClass: "a.B"})
	if back, err := discovery.ParseInstance(b); err != nil || string(back.Payload) != `{"@class":"a.B"}` {
		t.Fatalf("empty object payload with a class: %s -> %+v, %v", b, back, err)
	}
}

// What Curator 5.4 writes by default (JsonInstanceSerializer in its
// compatible mode: no "enabled") is read as enabled, the payload
// kept whole and its class taken from "@class".
func TestInstanceReadsCuratorJSON(t *testing.T) {
	curator := `{"name":"web","id":"2b7c","address":"192.168.1.2","port":9000,"sslPort":null,` +
		`"payload":{"@class":"java.util.HashMap","val":"a"},"registrationTimeUTC":1733000000123,"serviceType":"DYNAMIC",` +
		`"uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},{"value":"address","variable":true}]}}`
	in, err := discovery.ParseInstance([]byte(curator))
	if err != nil {
		t.Fatal(err)
	}
	if in.Disabled || in.PayloadClass != "java.util.HashMap" || in.ID != "2b7c" || in.Address != "192.168.1.2" ||
		in.Port != 9000 || in.RegistrationTimeUTC != 1733000000123 || in.ServiceType != discovery.Dynamic || len(in.URISpec.Parts) != 3 {
		t.Fatalf("read %+v", in)
	}
	p, err := discovery.Payload[struct{ Val string }](in)
	if err != nil || p.Val != "a" {
		t.Fatalf("typed payload %+v, %v", p, err)
	}
	disabled, err := discovery.ParseInstance([]byte(`{"name":"web","id":"x","enabled":false,"extra":[1]}`))
	if err != nil || !disabled.Disabled {
		t.Fatalf("enabled false read as %+v, %v", disabled, err)
	}
}

func TestInstanceErrors(t *testing.T) {
	for _, data := range []string{"", "garbage", "[]", `{"name":"x"}`, `{"id":3}`, `{"id":"a","port":"80"}`} {
		if _, err := discovery.ParseInstance([]byte(data)); !errors.Is(err, discovery.ErrInvalidInstance) {
			t.Errorf("ParseInstance(%q) = %v, want ErrInvalidInstance", data, err)
		}
	}
	for _, in := range []discovery.Instance{
		{ID: "a", Payload: json.RawMessage(`{bad`)},
		{ID: "a", Payload: json.RawMessage(`"s"`), PayloadClass: "java.lang.String"},
		{ID: "a", PayloadClass: "a.B"},
		{ID: "a", Payload: json.RawMessage(`{"@class":"a.C"}`), PayloadClass: "a.B"},
	} {
		if _, err := json.Marshal(in); !errors.Is(err, discovery.ErrInvalidInstance) {
			t.Errorf("Marshal(%+v) = %v, want ErrInvalidInstance", in, err)
		}
	}
	type P struct{ N int }
	in, err := discovery.WithPayload(discovery.Instance{ID: "a"}, P{N: 3})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := discovery.Payload[P](in); err != nil || p.N != 3 {
		t.Fatalf("payload round trip %+v, %v", p, err)
	}
	if _, err := discovery.Payload[P](discovery.Instance{ID: "a", Payload: json.RawMessage(`[1]`)}); err == nil {
		t.Fatal("a payload of the wrong shape decoded")
	}
	if p, err := discovery.Payload[P](discovery.Instance{ID: "a"}); err != nil || p.N != 0 {
		t.Fatalf("no payload: %+v, %v", p, err)
	}
}

// UnmarshalJSON of the JSON null leaves the instance as it was, with no
// error, as encoding/json does for a value it decodes null into (and
// calls UnmarshalJSON with "null" for: a struct field or a top-level
// value that is an Instance). It used to clear the instance. A pointer
// to an instance decodes null as nil; an instance read whole from null
// (ParseInstance) has no id.
func TestInstanceUnmarshalNull(t *testing.T) {
	want := discovery.Instance{Name: "web", ID: "a", Port: 80}
	in := want
	if err := json.Unmarshal([]byte("null"), &in); err != nil || in.ID != "a" || in.Name != "web" || in.Port != 80 {
		t.Errorf("json.Unmarshal(null) into an instance: %+v, %v; want it unchanged, no error", in, err)
	}
	in = want
	if err := in.UnmarshalJSON([]byte("null")); err != nil || in.ID != "a" {
		t.Errorf("UnmarshalJSON(null): %+v, %v; want it unchanged, no error", in, err)
	}
	var doc struct {
		In  discovery.Instance
		Ptr *discovery.Instance
	}
	doc.In, doc.Ptr = want, &want
	if err := json.Unmarshal([]byte(`{"In":null,"Ptr":null}`), &doc); err != nil || doc.In.ID != "a" || doc.Ptr != nil {
		t.Errorf("null fields: %+v, %v; want the instance unchanged and the pointer nil", doc, err)
	}
	if _, err := discovery.ParseInstance([]byte("null")); !errors.Is(err, discovery.ErrInvalidInstance) {
		t.Errorf("ParseInstance(null) = %v, want ErrInvalidInstance (no id)", err)
	}
}

// A Curator instance whose payload and uriSpec are null (Curator's
// JsonInstanceSerializer writes both so when they are not set, in its
// compatible mode without "enabled"), or whose address, ports and
// enabled are null, parses: no payload, no URI spec, enabled.
func TestInstanceReadsCuratorNulls(t *testing.T) {
	for _, doc := range []string{
		`{"name":"web","id":"a","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":1733000000123,"serviceType":"DYNAMIC","uriSpec":null}`,
		`{"name":"web","id":"a","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":1733000000123,"serviceType":"DYNAMIC","uriSpec":null,"enabled":null}`,
		`{"name":"web","id":"a","payload" : null ,"registrationTimeUTC":1733000000123,"serviceType":"DYNAMIC","uriSpec":{"parts":null}}`,
		`{"name":"web","id":"a","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":1733000000123,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`,
	} {
		in, err := discovery.ParseInstance([]byte(doc))
		if err != nil {
			t.Errorf("%s: %v", doc, err)
			continue
		}
		if in.ID != "a" || in.Payload != nil || in.PayloadClass != "" || in.Disabled || in.Address != "" || in.Port != 0 ||
			in.RegistrationTimeUTC != 1733000000123 || (in.URISpec != nil && len(in.URISpec.Parts) != 0) {
			t.Errorf("%s: read %+v", doc, in)
		}
		var viaJSON discovery.Instance
		if err := json.Unmarshal([]byte(doc), &viaJSON); err != nil || !reflect.DeepEqual(viaJSON, in) {
			t.Errorf("%s: json.Unmarshal %+v, %v; ParseInstance %+v", doc, viaJSON, err, in)
		}
	}
}
