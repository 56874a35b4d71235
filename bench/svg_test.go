package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
)

// countElements parses doc as XML (failing t if it is not) and counts
// elements by name.
func countElements(t *testing.T, doc []byte) map[string]int {
	t.Helper()
	n := map[string]int{}
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
		if se, ok := tok.(xml.StartElement); ok {
			n[se.Name.Local]++
		}
	}
}

func TestChartSVG(t *testing.T) {
	ch := chart{Title: "lock <1,4,16> & co", XLabel: "clients", YLabel: "handoffs/s", X: []string{"1", "4", "16"}, LogY: true,
		Series: []series{
			{Name: "ours", Y: []float64{100, 400, 800}},
			{Name: "curator", Y: []float64{90, math.NaN(), 300}}, // a missing point
			{Name: "kazoo", Y: []float64{0, -1, math.NaN()}},     // nothing plottable on a log axis
		}}
	var buf bytes.Buffer
	if err := ch.writeSVG(&buf); err != nil {
		t.Fatal(err)
	}
	n := countElements(t, buf.Bytes())
	if n["svg"] != 1 || n["circle"] != 5 || n["polyline"] != 2 {
		t.Fatalf("elements %v: want 1 svg, 5 points, 2 lines", n)
	}
	if !strings.Contains(buf.String(), "lock &lt;1,4,16&gt; &amp; co") {
		t.Fatal("title not escaped")
	}
	// An empty chart is still a document.
	buf.Reset()
	if err := (chart{Title: "empty", X: []string{"a"}}).writeSVG(&buf); err != nil {
		t.Fatal(err)
	}
	countElements(t, buf.Bytes())
}

func TestYTicks(t *testing.T) {
	ticks, lo, hi := yTicks(120, 450, true)
	if want := []float64{100, 200, 500}; lo != 100 || hi != 500 || !equal(ticks, want) {
		t.Fatalf("log ticks %v [%v, %v], want %v", ticks, lo, hi, want)
	}
	ticks, lo, hi = yTicks(120, 450000, true) // more than three decades: powers of ten
	if want := []float64{100, 1000, 10000, 100000, 1000000}; lo != 100 || hi != 1000000 || !equal(ticks, want) {
		t.Fatalf("log ticks %v [%v, %v], want %v", ticks, lo, hi, want)
	}
	ticks, lo, hi = yTicks(300, 300, true) // one value
	if lo != 200 || hi != 500 || !equal(ticks, []float64{200, 500}) {
		t.Fatalf("log ticks of one value %v [%v, %v]", ticks, lo, hi)
	}
	ticks, lo, hi = yTicks(3, 7, false)
	if lo != 0 || hi < 7 || ticks[0] != 0 || ticks[len(ticks)-1] != hi {
		t.Fatalf("linear ticks %v [%v, %v]", ticks, lo, hi)
	}
	for i := 1; i < len(ticks); i++ {
		if d := ticks[i] - ticks[i-1]; math.Abs(d-2) > 1e-9 {
			t.Fatalf("linear ticks %v: want steps of 2", ticks)
		}
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9*math.Abs(b[i]) {
			return false
		}
	}
	return true
}

func TestHuman(t *testing.T) {
	for v, want := range map[float64]string{0.5: "0.5", 253: "253", 1210: "1.21k", 382000: "382k", 2.5e6: "2.5M"} {
		if got := human(v); got != want {
			t.Errorf("human(%v) = %q, want %q", v, got, want)
		}
	}
}
