package discovery

import (
	"fmt"
	"testing"
)

// A parse is kept by the data itself: the same bytes give the same parse
// (its Payload shared, not parsed again), other bytes their own, data
// that is not an instance ok false; and the memo never holds more than
// memoBytes of data.
func TestParseMemo(t *testing.T) {
	var p parseMemo
	data := []byte(`{"name":"web","id":"a","payload":{"zone":"x"}}`)
	a, ok := p.parse(data)
	if !ok || a.ID != "a" {
		t.Fatalf("parse: %+v, %v", a, ok)
	}
	b, _ := p.parse(append([]byte(nil), data...)) // equal bytes, another slice
	if &a.Payload[0] != &b.Payload[0] {
		t.Fatal("the same data was parsed again")
	}
	if c, ok := p.parse([]byte(`{"name":"web","id":"c"}`)); !ok || c.ID != "c" {
		t.Fatalf("other data: %+v, %v", c, ok)
	}
	if _, ok := p.parse([]byte("not json")); ok {
		t.Fatal("data that is not an instance parsed")
	}
	big := make([]byte, 20<<10)
	for i := range 200 { // 4 MiB of distinct data
		n := copy(big, fmt.Sprintf(`{"name":"web","id":"i%d","address":"`, i))
		for j := n; j < len(big)-2; j++ {
			big[j] = 'x'
		}
		copy(big[len(big)-2:], `"}`)
		if _, ok := p.parse(big); !ok {
			t.Fatalf("instance %d did not parse", i)
		}
		if p.bytes > memoBytes {
			t.Fatalf("the memo holds %d bytes of data, more than %d", p.bytes, memoBytes)
		}
	}
	var nilMemo *parseMemo // a Discovery not made by New parses every time
	if in, ok := nilMemo.parse(data); !ok || in.ID != "a" {
		t.Fatalf("nil memo: %+v, %v", in, ok)
	}
}
