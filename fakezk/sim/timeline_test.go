package sim_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
)

var update = flag.Bool("update", false, "rewrite testdata/timeline.svg with the picture the code draws now")

// The picture of the package doc: seed 1057 of the lock + ID scenario
// with 5 clients, a seed whose plan fires nine classes of faults (drops
// applied and not, short and long partitions, expiries, delays,
// crash-restarts, operator deletes, pauses).
const (
	pictureFile = "testdata/timeline.svg"
	pictureSeed = 1057
)

// The picture was drawn before the counter classes, twins, lags and the
// acl class existed; without them the seed keeps that history.
func pictureScenario() sim.Scenario {
	sc := lockIDScenario(5, 10*time.Second)
	sc.Faults.Allow &^= sim.CounterFaults | sim.Of(sim.Lag) | sim.Of(sim.ACL)
	sc.NoTwins = true
	return sc
}

func drawSVG(t *testing.T, res sim.Result) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := sim.WriteTimeline(res, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The picture in testdata is what the code draws now from its seed: a
// change to the history of that seed (the recipes, the server, the
// faults) or to the drawing shows here; -update draws it again.
func TestTimelinePicture(t *testing.T) {
	got := drawSVG(t, sim.RunTimeline(pictureScenario(), pictureSeed))
	if *update {
		if err := os.WriteFile(pictureFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", pictureFile, len(got))
		return
	}
	want, err := os.ReadFile(pictureFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what seed %d draws now (%d bytes, the file has %d): if the change is meant, draw it again with\n"+
			"\tgo test ./fakezk/sim -run '^TestTimelinePicture$' -update\nand commit it", pictureFile, pictureSeed, len(got), len(want))
	}
}

// A real seed draws well-formed SVG: a lane for the server and one per
// client, a mark for every class of fault that fired, the lock holds as
// bars, the suspensions as shades; the same bytes every time, and
// recording the picture does not change the history.
func TestTimelineSVG(t *testing.T) {
	sc := pictureScenario()
	res := sim.RunTimeline(sc, pictureSeed)
	if res.Err != nil {
		t.Fatalf("seed %d fails: %v", pictureSeed, res.Err)
	}
	out := drawSVG(t, res)
	doc := parseSVG(t, out)

	var lanes []string
	for _, e := range doc.elems {
		if e.name == "g" && e.attr["class"] == "lane" {
			lanes = append(lanes, e.attr["id"])
		}
	}
	wantLanes := []string{"lane-server", "lane-client-0", "lane-client-1", "lane-client-2", "lane-client-3", "lane-client-4"}
	if !slices.Equal(lanes, wantLanes) {
		t.Errorf("lanes %v, want %v", lanes, wantLanes)
	}
	drawn := map[string]int{}
	for _, e := range doc.withClass("fault") {
		drawn[e.attr["data-class"]]++
	}
	classes := 0
	for _, c := range sim.Classes() {
		if n := res.FiredOf(c); n > 0 {
			classes++
			if drawn[c.String()] != n {
				t.Errorf("%d %s faults fired, %d drawn", n, c, drawn[c.String()])
			}
		}
	}
	if classes < 4 {
		t.Errorf("seed %d fires only %d classes of faults: pick a seed that shows more", pictureSeed, classes)
	}
	locks := 0
	for _, e := range doc.withClass("bar") {
		if e.attr["data-kind"] == "lock" {
			locks++
		}
	}
	if locks == 0 {
		t.Error("no lock hold drawn")
	}
	suspended := 0
	for _, e := range doc.withClass("session") {
		if e.attr["data-state"] == "suspended" {
			suspended++
		}
	}
	if suspended == 0 {
		t.Error("no suspension shaded")
	}
	if len(doc.withClass("violation")) != 0 {
		t.Error("a violation drawn for a seed that passed")
	}
	t.Logf("seed %d: %d bytes, %d lanes, %d fault marks of %d classes, %d lock holds, %d suspensions",
		pictureSeed, len(out), len(lanes), len(doc.withClass("fault")), classes, locks, suspended)

	if again := drawSVG(t, sim.RunTimeline(sc, pictureSeed)); !bytes.Equal(again, out) {
		t.Error("two recordings of the seed draw different pictures")
	}
	if plain := sim.RunSeed(sc, pictureSeed, true); plain.TraceHash != res.TraceHash || !slices.Equal(plain.Faults, res.Faults) {
		t.Errorf("recording the picture changed the history: trace %s vs %s", plain.TraceHash, res.TraceHash)
	}
}

// A failing seed's picture has the violation where it was recorded (a
// red line and its label), and text from the run is escaped: a label or
// a message with markup in it is text in the picture, not markup.
func TestTimelineViolation(t *testing.T) {
	const nasty = `<b>"fenced" & 'not'</b>]]>`
	sc := sim.Scenario{
		Name:     "markup<&>",
		Clients:  2,
		Duration: 5 * time.Second,
		Workload: func(r *sim.Trial) {
			start := r.Clock.Now()
			r.Clock.AfterFunc(time.Second, func() { r.Span(0, "lock", "token "+nasty, start, r.Clock.Now()) })
			r.OpenSpan(1, "kind<"+nasty+">", "open")
			r.Clock.AfterFunc(3*time.Second, func() { r.Errorf("bad %s\x01\nsecond line", nasty) })
		},
	}
	res := sim.RunTimeline(sc, 1)
	if res.Err == nil || res.Kind != sim.Safety || res.FailedAt != 3*time.Second {
		t.Fatalf("the run failed with %v (%v) at %s, want a safety violation at 3s", res.Err, res.Kind, res.FailedAt)
	}
	doc := parseSVG(t, drawSVG(t, res))
	if !strings.Contains(doc.text, "token "+nasty) || !strings.Contains(doc.text, "bad "+nasty+"\uFFFD") {
		t.Errorf("the label and the message are not in the picture's text as they were:\n%s", doc.text)
	}
	if !strings.Contains(doc.text, "markup<&> seed 1: FAILED (safety)") {
		t.Errorf("no failed header in %q", doc.text)
	}
	v := doc.withClass("violation")
	if len(v) != 1 {
		t.Fatalf("%d violation marks, want 1", len(v))
	}
	// The red line is at 3s on the axis: where the tick labelled 3s is.
	var lineX, tickX string
	for _, e := range doc.elems {
		switch {
		case e.name == "line" && e.inside(v[0]):
			lineX = e.attr["x1"]
		case e.name == "text" && e.chars == "3s":
			tickX = e.attr["x"]
		}
	}
	if lineX == "" || lineX != tickX {
		t.Errorf("violation line at x=%q, the 3s tick at x=%q", lineX, tickX)
	}
	if !strings.Contains(doc.text, "violation at 3s") {
		t.Error("the violation is not labelled with its time")
	}
	open := 0
	for _, e := range doc.withClass("bar") {
		if e.attr["data-kind"] == "kind<"+nasty+">" && e.attr["stroke-dasharray"] != "" {
			open++
		}
	}
	if open != 1 {
		t.Errorf("%d bars of the open span drawn as open, want 1", open)
	}
}

// A known bug switched back on (internal/canary) fails a seed, and the
// seed's picture marks the violation where the checker saw it.
func TestTimelineCanary(t *testing.T) {
	restore := canary.Enable("lock/hold-when-any-predecessor-goes")
	defer restore()
	sc := pictureScenario()
	_, failed, found := sim.FirstFailure(sc, 1, 200)
	if !found {
		t.Fatal("the canary was not caught in 200 seeds")
	}
	res := sim.RunTimeline(sc, failed.Seed)
	if res.Err == nil || res.Err.Error() != failed.Err.Error() || res.FailedAt != failed.FailedAt {
		t.Fatalf("seed %d: recorded run failed with %v at %s, the first run with %v at %s", failed.Seed, res.Err, res.FailedAt, failed.Err, failed.FailedAt)
	}
	doc := parseSVG(t, drawSVG(t, res))
	if len(doc.withClass("violation")) != 1 {
		t.Fatalf("seed %d failed (%v) and its picture has no violation mark", res.Seed, res.Err)
	}
	if want := "violation at " + res.FailedAt.Round(time.Millisecond).String(); !strings.Contains(doc.text, want) {
		t.Errorf("no %q in the picture", want)
	}
	if !strings.Contains(doc.text, "FAILED ("+res.Kind.String()+")") {
		t.Error("the header does not say the seed failed")
	}
	t.Logf("seed %d: %s at %s: %v", res.Seed, res.Kind, res.FailedAt, strings.SplitN(res.Err.Error(), "\n", 2)[0])
}

// svgDoc is a parsed picture: its elements in document order, and all
// its character data.
type svgDoc struct {
	elems []*svgElem
	text  string
}

type svgElem struct {
	name   string
	attr   map[string]string
	chars  string   // its own character data
	parent *svgElem // nil for the root
}

func (e *svgElem) inside(anc *svgElem) bool {
	for p := e.parent; p != nil; p = p.parent {
		if p == anc {
			return true
		}
	}
	return false
}

func (d *svgDoc) withClass(c string) []*svgElem {
	var out []*svgElem
	for _, e := range d.elems {
		if slices.Contains(strings.Fields(e.attr["class"]), c) {
			out = append(out, e)
		}
	}
	return out
}

// parseSVG parses b strictly with encoding/xml and fails t unless it is
// one svg element in the SVG namespace.
func parseSVG(t *testing.T, b []byte) *svgDoc {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	var doc svgDoc
	var text strings.Builder
	var stack []*svgElem
	roots := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &svgElem{name: tok.Name.Local, attr: map[string]string{}}
			for _, a := range tok.Attr {
				e.attr[a.Name.Local] = a.Value
			}
			if len(stack) == 0 {
				roots++
				if tok.Name.Local != "svg" || tok.Name.Space != "http://www.w3.org/2000/svg" {
					t.Fatalf("root element %v, want svg in the SVG namespace", tok.Name)
				}
			} else {
				e.parent = stack[len(stack)-1]
			}
			stack = append(stack, e)
			doc.elems = append(doc.elems, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].chars += string(tok)
			}
			text.Write(tok)
			text.WriteByte('\n')
		}
	}
	if roots != 1 {
		t.Fatalf("%d root elements", roots)
	}
	doc.text = text.String()
	return &doc
}
