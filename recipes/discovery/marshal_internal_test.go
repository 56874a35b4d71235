package discovery

import (
	"bytes"
	"encoding/json"
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
