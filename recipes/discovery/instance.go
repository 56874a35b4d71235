package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/zkflow/zkflow/task"
)

// ServiceType is how an instance is registered, as Curator's ServiceType
// names it.
type ServiceType string

// The service types of Curator's ServiceType.
const (
	// Dynamic: an ephemeral node, kept registered across session expiries.
	Dynamic ServiceType = "DYNAMIC"
	// Static: a persistent node.
	Static ServiceType = "STATIC"
	// Permanent: a persistent node.
	Permanent ServiceType = "PERMANENT"
	// DynamicSequential: an ephemeral sequential node (Curator appends a
	// sequence number to the id in the node's name). Read, never
	// registered, by this package.
	DynamicSequential ServiceType = "DYNAMIC_SEQUENTIAL"
)

// ErrInvalidInstance is wrapped by the error of ParseInstance for data
// that is not the JSON of a ServiceInstance.
var ErrInvalidInstance = errors.New("discovery: invalid instance")

// Instance is one instance of a service: the JSON of Curator's
// ServiceInstance, field for field. Port and SSLPort 0 are written as null
// (Curator's Integer null) and null is read as 0. Payload is the payload's
// JSON as written (nil is null); PayloadClass, if set, is written as the
// payload object's "@class" member, the Java class Curator's
// JsonInstanceSerializer decodes it to, and read back from it.
type Instance struct {
	Name                string
	ID                  string
	Address             string
	Port                int
	SSLPort             int
	Payload             json.RawMessage
	PayloadClass        string
	RegistrationTimeUTC int64 // milliseconds since the epoch; Register sets it when 0
	ServiceType         ServiceType
	URISpec             *URISpec
	Disabled            bool // written as "enabled": false; a provider skips it
}

// own returns in with its Payload and URISpec copied: an instance no other
// holder shares.
func (in Instance) own() Instance {
	in.Payload = bytes.Clone(in.Payload)
	if u := in.URISpec; u != nil {
		in.URISpec = &URISpec{Parts: slices.Clone(u.Parts)}
	}
	return in
}

// URISpec is Curator's UriSpec: parts, each a constant or a variable to
// fill in (such as {scheme}, {address}, {port}).
type URISpec struct {
	Parts []URIPart `json:"parts"`
}

// URIPart is one part of a URISpec.
type URIPart struct {
	Value    string `json:"value"`
	Variable bool   `json:"variable"`
}

// wire is the JSON layout, in the order Curator's Jackson writes it.
type wire struct {
	Name                string          `json:"name"`
	ID                  string          `json:"id"`
	Address             *string         `json:"address"`
	Port                *int            `json:"port"`
	SSLPort             *int            `json:"sslPort"`
	Payload             json.RawMessage `json:"payload"`
	RegistrationTimeUTC int64           `json:"registrationTimeUTC"`
	ServiceType         ServiceType     `json:"serviceType"`
	URISpec             *URISpec        `json:"uriSpec"`
	Enabled             *bool           `json:"enabled"`
}

// javaInt checks that a port fits Java's int, as Curator reads it.
func javaInt(what string, n int) error {
	if n < math.MinInt32 || n > math.MaxInt32 {
		return fmt.Errorf("%w: %s %d is out of the range of Java's int", ErrInvalidInstance, what, n)
	}
	return nil
}

func intOrNull(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

// MarshalJSON writes the instance as Curator's JsonInstanceSerializer
// does, with "enabled" (which Curator 5 reads whatever its serializer's
// mode). A payload that is not valid JSON (or not UTF-8, which JSON is
// and Curator's reader requires), a port or SSL port out of the range of
// Java's int (Curator's Integer: its reader refuses the node), or a
// PayloadClass with a payload that is not an object or whose "@class"
// member names another class, is an error wrapping ErrInvalidInstance.
func (in Instance) MarshalJSON() ([]byte, error) {
	if err := javaInt("port", in.Port); err != nil {
		return nil, err
	}
	if err := javaInt("sslPort", in.SSLPort); err != nil {
		return nil, err
	}
	if b, ok := in.canonical(); ok {
		return b, nil
	}
	return in.marshalWire()
}

// marshalWire is MarshalJSON by json.Marshal of the wire layout, for
// any instance (canonical writes the common ones the same way).
func (in Instance) marshalWire() ([]byte, error) {
	w := wire{Name: in.Name, ID: in.ID, Port: intOrNull(in.Port), SSLPort: intOrNull(in.SSLPort),
		RegistrationTimeUTC: in.RegistrationTimeUTC, ServiceType: in.ServiceType, URISpec: in.URISpec}
	if in.Address != "" {
		w.Address = &in.Address
	}
	enabled := !in.Disabled
	w.Enabled = &enabled
	if w.ServiceType == "" {
		w.ServiceType = Dynamic
	}
	p, err := payloadOut(in.Payload, in.PayloadClass)
	if err != nil {
		return nil, err
	}
	w.Payload = p
	return json.Marshal(w)
}

// instanceJSON is an instance's JSON (json.Marshal's, MarshalJSON's)
// cut around the value of its registrationTimeUTC, which Register sets
// at each run: the rest is marshaled once, as the task is made, and a run
// writes its time between the two.
type instanceJSON struct{ head, tail []byte }

// timeMember is the member registrationTimeUTC with the value 0, as
// MarshalJSON writes it, followed by the next member's comma.
var timeMember = []byte(`"registrationTimeUTC":0,`)

// jsonTemplate returns in's JSON cut around its registrationTimeUTC; its
// error is MarshalJSON's.
func (in Instance) jsonTemplate() (instanceJSON, error) {
	in.RegistrationTimeUTC = 0
	b, err := in.MarshalJSON()
	if err != nil {
		return instanceJSON{}, err
	}
	// The last one: the payload, written before it, may hold such a
	// member; what follows it (serviceType, uriSpec's strings, enabled)
	// cannot (a quote in a string is escaped).
	i := bytes.LastIndex(b, timeMember)
	cut := i + len(timeMember) - len("0,")
	return instanceJSON{head: b[:cut], tail: b[cut+len("0"):]}, nil
}

// with returns the JSON with registrationTimeUTC t, in a slice of its
// own. MarshalJSON's output is already compact and escaped, as
// json.Marshal would make it of the instance.
func (j instanceJSON) with(t int64) []byte {
	out := make([]byte, 0, len(j.head)+20+len(j.tail))
	out = append(out, j.head...)
	out = strconv.AppendInt(out, t, 10)
	return append(out, j.tail...)
}

// canonical writes in as MarshalJSON does when it has no payload (nor
// payload class) and no URI spec, and its strings need no escape (plain
// ASCII, without the characters json.Marshal escapes): the common
// registration, written without reflection. ok false: anything else,
// for json.Marshal.
func (in Instance) canonical() (b []byte, ok bool) {
	typ := in.ServiceType
	if typ == "" {
		typ = Dynamic
	}
	if len(bytes.TrimSpace(in.Payload)) != 0 || in.PayloadClass != "" || in.URISpec != nil ||
		!plainJSON(in.Name) || !plainJSON(in.ID) || !plainJSON(in.Address) || !plainJSON(string(typ)) {
		return nil, false
	}
	b = make([]byte, 0, 160+len(in.Name)+len(in.ID)+len(in.Address))
	b = append(b, `{"name":"`...)
	b = append(b, in.Name...)
	b = append(b, `","id":"`...)
	b = append(b, in.ID...)
	b = append(b, `","address":`...)
	if in.Address == "" {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = append(b, in.Address...)
		b = append(b, '"')
	}
	b = append(b, `,"port":`...)
	b = appendIntOrNull(b, in.Port)
	b = append(b, `,"sslPort":`...)
	b = appendIntOrNull(b, in.SSLPort)
	b = append(b, `,"payload":null,"registrationTimeUTC":`...)
	b = strconv.AppendInt(b, in.RegistrationTimeUTC, 10)
	b = append(b, `,"serviceType":"`...)
	b = append(b, typ...)
	b = append(b, `","uriSpec":null,"enabled":`...)
	b = strconv.AppendBool(b, !in.Disabled)
	return append(b, '}'), true
}

// plainJSON reports whether json.Marshal writes s as its bytes between
// quotes: printable ASCII but for the quote, the backslash and the HTML
// characters it escapes (<, >, &).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < ' ' || c > '~', c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

func appendIntOrNull(b []byte, n int) []byte {
	if n == 0 {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, int64(n), 10)
}

// payloadOut is the payload as written: null for none, the "@class"
// member first when a class is named and the payload has none (one it
// has, naming the same class, stays where it is).
func payloadOut(p json.RawMessage, class string) (json.RawMessage, error) {
	p = bytes.TrimSpace(p)
	if len(p) == 0 {
		if class != "" {
			return nil, fmt.Errorf("%w: payload class %q without a payload", ErrInvalidInstance, class)
		}
		return json.RawMessage("null"), nil
	}
	// json.Valid does not look at the bytes inside a string: JSON is
	// UTF-8 (RFC 8259), and Curator's reader refuses other bytes.
	if !json.Valid(p) || !utf8.Valid(p) {
		return nil, fmt.Errorf("%w: payload is not JSON", ErrInvalidInstance)
	}
	if class == "" {
		return p, nil
	}
	if p[0] != '{' {
		return nil, fmt.Errorf("%w: payload class %q needs an object payload", ErrInvalidInstance, class)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(p, &m); err != nil {
		return nil, fmt.Errorf("%w: payload: %v", ErrInvalidInstance, err)
	}
	if had, ok := m["@class"]; ok {
		// An instance read back (ParseInstance, Query, a Cache) has its
		// class in both: the payload is written as it was read. Only
		// two different classes are an error.
		var was string
		if json.Unmarshal(had, &was) != nil || was != class {
			return nil, fmt.Errorf("%w: the payload's @class member %s is not PayloadClass %q", ErrInvalidInstance, had, class)
		}
		return p, nil
	}
	cls, _ := json.Marshal(class)
	rest := bytes.TrimSpace(p[1:])
	out := append([]byte(`{"@class":`), cls...)
	if rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...), nil
}

// UnmarshalJSON reads the JSON of a Curator ServiceInstance. A missing
// "enabled" is true (Curator's default: Disabled false); unknown members are ignored (as
// Curator's serializer does). The payload's "@class" member, if any, is
// copied to PayloadClass and left in Payload. The JSON null leaves the
// instance as it was, as encoding/json does for a value it decodes null
// into (it calls UnmarshalJSON with "null" for an Instance, not for a
// *Instance, which it sets to nil). On a nil *Instance it fails with an
// error wrapping task.ErrInvalidArgument.
func (in *Instance) UnmarshalJSON(b []byte) error {
	if in == nil {
		return fmt.Errorf("discovery: UnmarshalJSON on a nil *Instance: %w", task.ErrInvalidArgument)
	}
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	if c, ok := parseCanonical(b); ok {
		*in = c
		return nil
	}
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidInstance, err)
	}
	*in = Instance{Name: w.Name, ID: w.ID, RegistrationTimeUTC: w.RegistrationTimeUTC,
		ServiceType: w.ServiceType, URISpec: w.URISpec, Disabled: w.Enabled != nil && !*w.Enabled}
	if w.Address != nil {
		in.Address = *w.Address
	}
	if w.Port != nil {
		in.Port = *w.Port
	}
	if w.SSLPort != nil {
		in.SSLPort = *w.SSLPort
	}
	if p := bytes.TrimSpace(w.Payload); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		in.Payload = slices.Clone(p)
		if p[0] == '{' {
			var c struct {
				Class string `json:"@class"`
			}
			if json.Unmarshal(p, &c) == nil {
				in.PayloadClass = c.Class
			}
		}
	}
	return nil
}

// ParseInstance reads a node's data as a ServiceInstance. It is what
// Query and Cache apply to each node; data that is not such JSON (no
// object, or no id) fails with an error wrapping ErrInvalidInstance.
func ParseInstance(data []byte) (Instance, error) {
	// UnmarshalJSON itself, not json.Unmarshal into an Instance: that
	// would check and scan data once to find the value, then again in
	// UnmarshalJSON's own json.Unmarshal.
	var in Instance
	if err := in.UnmarshalJSON(data); err != nil {
		return Instance{}, err
	}
	if in.ID == "" {
		return Instance{}, fmt.Errorf("%w: no id", ErrInvalidInstance)
	}
	return in, nil
}

// Payload decodes the instance's payload into a T (a "@class" member is
// ignored unless T has a field for it). A missing payload is T's zero
// value.
func Payload[T any](in Instance) (T, error) {
	var v T
	if len(in.Payload) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(in.Payload, &v); err != nil {
		return v, fmt.Errorf("discovery: payload of %s/%s: %w", in.Name, in.ID, err)
	}
	return v, nil
}

// WithPayload returns in with v, encoded as JSON, as its payload.
func WithPayload[T any](in Instance, v T) (Instance, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return in, fmt.Errorf("discovery: payload of %s/%s: %w", in.Name, in.ID, err)
	}
	in.Payload = b
	return in, nil
}

// parseCanonical reads b when it is, byte for byte, the JSON MarshalJSON
// writes for an instance with no payload and no URI spec, with strings
// that need no unescaping: the common registration, read by every cache
// and query that sees it, which json.Unmarshal (by reflection) made a
// large part of a cache's work. ok false: b is anything else (for
// json.Unmarshal). What it returns is what json.Unmarshal reads.
func parseCanonical(b []byte) (in Instance, ok bool) {
	p := canonParser{b: b}
	// The strings are made once all of b has been read: data that is not
	// of the form costs none.
	var name, id, addr, typ []byte
	var enabled bool
	ok = p.lit(`{"name":`) && p.str(&name) &&
		p.lit(`,"id":`) && p.str(&id) &&
		p.lit(`,"address":`) && (p.lit("null") || p.str(&addr)) &&
		p.lit(`,"port":`) && (p.lit("null") || p.num(&in.Port)) &&
		p.lit(`,"sslPort":`) && (p.lit("null") || p.num(&in.SSLPort)) &&
		p.lit(`,"payload":null,"registrationTimeUTC":`) && p.num64(&in.RegistrationTimeUTC) &&
		p.lit(`,"serviceType":`) && p.str(&typ) &&
		p.lit(`,"uriSpec":null,"enabled":`) && (p.lit("true") && p.set(&enabled) || p.lit("false")) &&
		p.lit("}") && len(p.b) == 0
	if !ok {
		return Instance{}, false
	}
	in.Name, in.ID, in.Address, in.ServiceType = string(name), string(id), string(addr), ServiceType(typ)
	in.Disabled = !enabled
	return in, true
}

// canonParser consumes b from its start (parseCanonical).
type canonParser struct{ b []byte }

// lit consumes s if b starts with it.
func (p *canonParser) lit(s string) bool {
	if len(p.b) < len(s) || string(p.b[:len(s)]) != s {
		return false
	}
	p.b = p.b[len(s):]
	return true
}

func (p *canonParser) set(v *bool) bool {
	*v = true
	return true
}

// str consumes a string with no escape and no control character, of
// valid UTF-8: its bytes are its value (v, within b).
func (p *canonParser) str(v *[]byte) bool {
	if len(p.b) == 0 || p.b[0] != '"' {
		return false
	}
	for i := 1; i < len(p.b); i++ {
		switch c := p.b[i]; {
		case c == '"':
			s := p.b[1:i]
			if !utf8.Valid(s) {
				return false
			}
			*v = s
			p.b = p.b[i+1:]
			return true
		case c < ' ' || c == '\\':
			return false
		}
	}
	return false
}

// num64 consumes an integer written as JSON writes one (no fraction, no
// exponent, no leading zero) of at most 18 digits (it fits an int64).
func (p *canonParser) num64(v *int64) bool {
	i := 0
	neg := len(p.b) > 0 && p.b[0] == '-'
	if neg {
		i++
	}
	digits := i
	var n int64
	for i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9' {
		n = n*10 + int64(p.b[i]-'0')
		i++
	}
	if i == digits || i-digits > 18 || p.b[digits] == '0' && i > digits+1 {
		return false
	}
	if neg {
		n = -n
	}
	*v, p.b = n, p.b[i:]
	return true
}

// num is num64 for an int.
func (p *canonParser) num(v *int) bool {
	var n int64
	if !p.num64(&n) || int64(int(n)) != n {
		return false
	}
	*v = int(n)
	return true
}
