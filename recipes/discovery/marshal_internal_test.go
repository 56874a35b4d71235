package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// Register writes an instance's JSON from a template cut around its
// registrationTimeUTC: the bytes are json.Marshal's of the instance with
// that time, whatever its strings and payload hold.
func TestJSONTemplateIsMarshal(t *testing.T) {
	ins := []Instance{
		{Name: "svc", ID: "a", ServiceType: Dynamic},
		{Name: "svc", ID: "b<&>", Address: "10.0.0.1", Port: 80, SSLPort: 443, ServiceType: Static, Disabled: true},
		{Name: "svc", ID: "c", Payload: json.RawMessage(` {"registrationTimeUTC":0,"serviceType":"x", "s":"<\u2028>"} `), ServiceType: Permanent},
		{Name: "svc", ID: "d", Payload: json.RawMessage(`{"v":1}`), PayloadClass: "java.util.HashMap", ServiceType: Dynamic,
			URISpec: &URISpec{Parts: []URIPart{{Value: `"registrationTimeUTC":0,`, Variable: true}, {Value: "://"}}}},
		{Name: "svc", ID: "e", Payload: json.RawMessage(`[1, 2]`), ServiceType: Dynamic, RegistrationTimeUTC: 12345},
	}
	for _, in := range ins {
		js, err := in.jsonTemplate()
		if err != nil {
			t.Fatalf("%s: %v", in.ID, err)
		}
		for _, ts := range []int64{0, 1, -7, 1700000000000, in.RegistrationTimeUTC} {
			in.RegistrationTimeUTC = ts
			want, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := js.with(ts); !bytes.Equal(got, want) {
				t.Errorf("%s at %d:\n got %s\nwant %s", in.ID, ts, got, want)
			}
		}
	}
	if _, err := (Instance{ID: "x", Payload: json.RawMessage(`{`)}).jsonTemplate(); err == nil {
		t.Error("an invalid payload: no error")
	}
}

// The fast path of UnmarshalJSON (parseCanonical) reads what
// json.Unmarshal into the wire layout reads, or leaves the data to it.
func TestParseCanonicalIsUnmarshal(t *testing.T) {
	base := []Instance{
		{Name: "svc", ID: "a", ServiceType: Dynamic},
		{Name: "svc", ID: "b", Address: "10.0.0.1", Port: 8080, SSLPort: 443, ServiceType: Static, Disabled: true, RegistrationTimeUTC: 1700000000000},
		{Name: "sv\u00e9", ID: "c\u2028", Address: "x<y", Port: -3, ServiceType: Permanent, RegistrationTimeUTC: -12},
		{Name: "svc", ID: "d", Payload: json.RawMessage(`{"v":1}`), ServiceType: Dynamic},
		{Name: "svc", ID: "e", URISpec: &URISpec{Parts: []URIPart{{Value: "x"}}}, ServiceType: Dynamic},
		{Name: "", ID: "", ServiceType: ""},
	}
	var docs [][]byte
	for _, in := range base {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	docs = append(docs,
		[]byte(`{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":0,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`),
		[]byte(`{"name":"s","id":"i","address":null,"port":01,"sslPort":null,"payload":null,"registrationTimeUTC":0,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`),
		[]byte(`{"name":"s","id":"i","address":null,"port":1e2,"sslPort":null,"payload":null,"registrationTimeUTC":0,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`),
		[]byte(`{"name":"s","id":"i","address":null,"port":-0,"sslPort":null,"payload":null,"registrationTimeUTC":-0,"serviceType":"DYNAMIC","uriSpec":null,"enabled":false}`),
		[]byte(`{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":99999999999999999999,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`),
		[]byte(`{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":999999999999999999,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`),
		[]byte(`{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":1,"serviceType":"DYNAMIC","uriSpec":null,"enabled":null}`),
		[]byte(`{"name":"s\x01","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":1,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`),
		[]byte("{\"name\":\"s\xff\",\"id\":\"i\",\"address\":null,\"port\":null,\"sslPort\":null,\"payload\":null,\"registrationTimeUTC\":1,\"serviceType\":\"DYNAMIC\",\"uriSpec\":null,\"enabled\":true}"),
		[]byte(`{"name":"s\"q","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":1,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`),
		[]byte(`{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":1,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true} `),
		[]byte(`{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":1,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}x`),
		[]byte(`{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":1,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true`),
		[]byte(`{"name":"s","id":"i","address":"a","port":9223372036854775807,"sslPort":null,"payload":null,"registrationTimeUTC":1,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`),
		[]byte(`null`),
		[]byte(` null `),
		[]byte(`nul`),
		[]byte(`{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":1,"serviceType":"DYNAMIC","uriSpec":null}`),
		[]byte(`{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":1,"serviceType":null,"uriSpec":null,"enabled":true}`),
		[]byte(`{"name":null,"id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":null,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`),
		[]byte(`{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":{"@class":null},"registrationTimeUTC":1,"serviceType":"DYNAMIC","uriSpec":{"parts":null},"enabled":true}`),
		[]byte(`{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":1,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true,"enabled":false}`),
		[]byte(`{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":1,"serviceType":"DYNAMIC","uriSpec":null,"enabled":tru}`),
	)
	fast := 0
	for _, b := range docs {
		sameAsUnmarshal(t, b)
		// The slow path: json.Unmarshal into the wire layout.
		var slow Instance
		var w wire
		slowErr := json.Unmarshal(b, &w)
		if slowErr == nil {
			if err := slow.UnmarshalJSON(append([]byte(" "), b...)); err != nil { // a leading space skips the fast path
				t.Fatal(err)
			}
		}
		c, ok := parseCanonical(b)
		if !ok {
			continue
		}
		fast++
		if slowErr != nil {
			t.Errorf("%s: read, json.Unmarshal fails: %v", b, slowErr)
			continue
		}
		if !reflect.DeepEqual(c, slow) {
			t.Errorf("%s:\n fast %#v\n slow %#v", b, c, slow)
		}
	}
	if fast < 6 {
		t.Errorf("only %d documents took the fast path", fast)
	}
}

// sameAsUnmarshal checks that UnmarshalJSON reads b, from an instance
// already set, as its slow path does (json.Unmarshal into the wire
// layout; a leading space skips the fast path), the same values and an
// error in the same cases, one wrapping ErrInvalidInstance; and, b
// being JSON, as encoding/json does, which calls it (or, for a syntax
// error, does not).
func sameAsUnmarshal(t *testing.T, b []byte) {
	t.Helper()
	was := Instance{Name: "was", ID: "was", Port: 1, Payload: json.RawMessage(`{"w":1}`)}
	got, slow, viaJSON := was, was, was
	gotErr := got.UnmarshalJSON(b)
	slowErr := slow.UnmarshalJSON(append([]byte(" "), b...))
	if (gotErr == nil) != (slowErr == nil) || !reflect.DeepEqual(got, slow) {
		t.Fatalf("%q:\n read %#v, %v\n slow %#v, %v", b, got, gotErr, slow, slowErr)
	}
	if gotErr != nil && !errors.Is(gotErr, ErrInvalidInstance) {
		t.Fatalf("%q: %v, want ErrInvalidInstance", b, gotErr)
	}
	if !json.Valid(b) {
		return
	}
	jsonErr := json.Unmarshal(b, &viaJSON)
	if (jsonErr == nil) != (gotErr == nil) || !reflect.DeepEqual(viaJSON, got) {
		t.Fatalf("%q:\n read         %#v, %v\n json.Unmarshal %#v, %v", b, got, gotErr, viaJSON, jsonErr)
	}
}

// FuzzParseCanonical: whatever the fast path reads, json.Unmarshal reads
// the same; and UnmarshalJSON reads any data as its slow path and
// encoding/json do (sameAsUnmarshal).
func FuzzParseCanonical(f *testing.F) {
	f.Add([]byte(`{"name":"s","id":"i","address":"10.0.0.1","port":80,"sslPort":null,"payload":null,"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`))
	f.Add([]byte(`{"name":"s","id":"i","address":null,"port":null,"sslPort":-0,"payload":null,"registrationTimeUTC":-12,"serviceType":"STATIC","uriSpec":null,"enabled":false}`))
	f.Add([]byte(`{"name":"s","id":"i","address":null,"port":null,"sslPort":null,"payload":null,"registrationTimeUTC":1,"serviceType":"DYNAMIC","uriSpec":null}`))
	f.Add([]byte(`{"name":"s","id":"i","payload":{"@class":"java.util.HashMap","v":1},"uriSpec":{"parts":[{"value":"x","variable":true}]},"enabled":null}`))
	f.Add([]byte(`null`))
	f.Add([]byte(` null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sameAsUnmarshal(t, b)
		c, ok := parseCanonical(b)
		if !ok {
			return
		}
		var slow Instance
		if err := slow.UnmarshalJSON(append([]byte(" "), b...)); err != nil {
			t.Fatalf("%q: read, json.Unmarshal fails: %v", b, err)
		}
		if !reflect.DeepEqual(c, slow) {
			t.Fatalf("%q:\n fast %#v\n slow %#v", b, c, slow)
		}
	})
}

// MarshalJSON's fast path (canonical) writes what json.Marshal writes of
// the wire layout, or leaves the instance to it.
func TestCanonicalIsMarshal(t *testing.T) {
	ins := []Instance{
		{Name: "svc", ID: "a"},
		{Name: "svc", ID: "b", Address: "10.0.0.1", Port: 8080, SSLPort: -443, ServiceType: Static, Disabled: true, RegistrationTimeUTC: -1700000000000},
		{Name: "svc", ID: "c~ !#", Address: "x", ServiceType: Permanent, RegistrationTimeUTC: 1},
		{Name: "svc", ID: "d", Payload: json.RawMessage(" \n ")},
		{Name: "svc", ID: "e<", ServiceType: Dynamic},
		{Name: "svc", ID: "f", Address: "a&b"},
		{Name: "sv\u00e9", ID: "g"},
		{Name: "svc", ID: "h\"", ServiceType: "X\\"},
		{Name: "svc", ID: "i\x7f"},
		{Name: "svc", ID: "j", Payload: json.RawMessage(`null`)},
		{Name: "svc", ID: "k", URISpec: &URISpec{}},
		{Name: "svc", ID: "l", Payload: json.RawMessage(`{}`), PayloadClass: "C"},
	}
	fast := 0
	for _, in := range ins {
		// The slow path: MarshalJSON's json.Marshal of the wire layout.
		want, err := in.marshalWire()
		if err != nil {
			t.Fatal(err)
		}
		got, ok := in.canonical()
		if !ok {
			continue
		}
		fast++
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", in.ID, got, want)
		}
	}
	if fast != 4 {
		t.Errorf("%d instances took the fast path, want 4", fast)
	}
}
