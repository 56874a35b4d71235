package sim

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The picture's geometry, in SVG user units (pixels).
const (
	svgWidth  = 1200.0
	svgLeft   = 92.0 // the lane labels' column
	svgRight  = 16.0
	svgPlot   = svgWidth - svgLeft - svgRight
	svgTop    = 66.0 // where the first lane starts, below the header and the axis
	glyphRowH = 13.0 // the row of the faults of an instant, at the top of each lane
	spanRowH  = 7.0  // one row of the faults that last (partitions, delays...)
	barRowH   = 12.0 // one row of bars
	lanePad   = 3.0
	charW     = 5.6 // the width of a character at font-size 9, a little generous
	maxRows   = 6   // rows of bars one kind, or of faults that last, take in a lane at most (more overlap)
	maxTitle  = 4000
)

// Colours of the bars, by kind: the recipes' kinds first, then the
// others in the order they first appear.
var (
	knownKinds = map[string]string{"lock": "#4c78a8", "leader": "#f58518", "member": "#54a24b", "task": "#b279a2"}
	moreKinds  = []string{"#72b7b2", "#e45756", "#9d755d", "#bab0ac", "#eeca3b", "#ff9da6"}
)

// faultColours are the colours of the fault classes' marks.
var faultColours = [numClasses]string{
	DropUnapplied:  "#444444",
	DropApplied:    "#444444",
	PartitionShort: "#fd8d3c",
	PartitionLong:  "#a63603",
	Expire:         "#d62728",
	Delay:          "#9467bd",
	Restart:        "#7f7f7f",
	Wipe:           "#000000",
	ClockJump:      "#1f77b4",
	CrashRestart:   "#000000",
	Operator:       "#17becf",
	Pause:          "#8c564b",
	Counters:       "#bcbd22",
	EmptyDir:       "#17becf",
	Lag:            "#2ca02c",
	ContextOutage:  "#e377c2",
	ACL:            "#7b4173",
	Blink:          "#f7b6d2",
	OperatorInCut:  "#17becf",
	RemoveWatch:    "#aec7e8",
}

// WriteSVG draws the timeline as an SVG picture: simulated time across,
// one lane for the server and one per client; on each lane, the faults
// where they struck (partitions, delays, pauses, restarts and quorum
// losses as spans from start to end; drops, expiries, crashes, operator
// edits and wipes as marks; clock jumps as a band across every lane),
// the client's session states as a shade (suspended, expired), and the
// bars the run recorded, one row per kind; the phases of the run as
// dashed lines; and, when the seed failed, a red line where the first
// violation was recorded. Every mark carries its details in a <title>
// (a tooltip in a browser); a bar is labelled only where its label fits.
// The same timeline draws the same bytes.
func (tl *timeline) WriteSVG(w io.Writer) error {
	var p painter
	p.tl = tl
	p.draw()
	_, err := w.Write(p.b.Bytes())
	return err
}

// painter draws one timeline into b.
type painter struct {
	tl     *timeline
	b      bytes.Buffer
	lanes  []lane          // lanes[0] is the server's, lanes[i+1] client i's
	row    []int           // per span: its row in its lane
	frow   []int           // per fault that lasts: its row in its lane
	fend   []time.Duration // per fault: when it ended (a pause ends at a crash)
	colour map[string]string
	kinds  []string // bar kinds in order of first appearance
	bottom float64  // the bottom of the last lane
}

// draw lays the picture out and writes it: background, header, lanes,
// axis, then what spans the lanes, the violation and the legend.
func (p *painter) draw() {
	p.layout()
	tl := p.tl
	legendRows := p.legendRows()
	height := p.bottom + 28 + 16*float64(legendRows) + 8
	p.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="10">`+"\n",
		num(svgWidth), num(height), num(svgWidth), num(height))
	p.printf("<desc>")
	p.text("sim timeline: " + tl.scenario + " seed " + strconv.FormatUint(tl.seed, 10))
	p.printf("</desc>\n")
	p.printf(`<rect width="%s" height="%s" fill="#ffffff"/>`+"\n", num(svgWidth), num(height))
	p.header()
	for i, l := range p.lanes {
		fill := "#ffffff"
		if i%2 == 0 {
			fill = "#f6f6f6"
		}
		p.printf(`<rect x="0" y="%s" width="%s" height="%s" fill="%s"/>`+"\n", num(l.top), num(svgWidth), num(l.height), fill)
	}
	p.axis()
	for i := range p.lanes {
		p.lane(i)
	}
	p.jumps()
	p.overlays()
	p.violation()
	p.legend()
	p.printf("</svg>\n")
}

// header writes the seed, its verdict, its length and faults, the plan,
// and, if it failed, the first line of the violation (all of it as a
// tooltip).
func (p *painter) header() {
	tl := p.tl
	verdict := "passed"
	if tl.failed {
		verdict = "FAILED (" + tl.kind.String() + ")"
	}
	p.printf(`<text x="8" y="18" font-size="13" font-weight="bold">`)
	head := tl.scenario + " seed " + strconv.FormatUint(tl.seed, 10) + ": " + verdict + ", " + dur(tl.end) +
		" simulated, " + strconv.Itoa(tl.fired) + " faults injected"
	if tl.root != "" {
		head += ", every client under the root " + tl.root
	}
	p.text(clip(head, 150))
	p.printf("</text>\n")
	p.printf(`<text x="8" y="33" font-size="11" fill="#555555">`)
	p.text(clip(tl.plan.String(), 180))
	p.printf("</text>\n")
	if tl.failed {
		msg := firstLineOf(tl.failMsg)
		p.printf(`<text class="violation-message" x="8" y="47" font-size="11" fill="#d62728">`)
		p.title(tl.failMsg)
		p.text("first violation at " + dur(tl.failAt) + ": " + clip(msg, 170))
		p.printf("</text>\n")
	}
}

// axis draws the time axis above the lanes and a grid line per tick.
func (p *painter) axis() {
	step := tickStep(p.tl.end)
	p.printf(`<text x="8" y="%s" fill="#555555">simulated time</text>`+"\n", num(svgTop-6))
	for t := time.Duration(0); t <= p.tl.end; t += step {
		x := p.x(t)
		p.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#dddddd"/>`+"\n", num(x), num(svgTop-3), num(x), num(p.bottom))
		p.printf(`<text x="%s" y="%s" text-anchor="middle" fill="#555555">%s</text>`+"\n", num(x), num(svgTop-6), tickLabel(t, step))
	}
}

// tickStep is the largest of 1, 2, 5 × 10^k ms (and 30s, 1m, 2m...)
// that puts at most 12 ticks on the axis.
func tickStep(end time.Duration) time.Duration {
	for _, s := range []time.Duration{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 30_000, 60_000, 120_000, 300_000, 600_000} {
		if step := s * time.Millisecond; end/step <= 12 {
			return step
		}
	}
	return 30 * time.Minute * time.Duration(1+end/(12*30*time.Minute))
}

// tickLabel labels the tick at t: in ms below a second when the step is
// less than a second, else in seconds.
func tickLabel(t, step time.Duration) string {
	if t == 0 {
		return "0"
	}
	if step < time.Second && t < time.Second {
		return strconv.FormatInt(t.Milliseconds(), 10) + "ms"
	}
	return strconv.FormatFloat(t.Seconds(), 'f', -1, 64) + "s"
}

// jumps draws each clock jump as a band across every lane, over what
// the lanes show (time that passed while no client ran); its tooltip is
// on its mark in the server's lane.
func (p *painter) jumps() {
	for _, f := range p.tl.faults {
		if f.class != ClockJump {
			continue
		}
		x0, x1 := p.x(f.at), p.x(f.at+f.d)
		p.printf(`<rect class="jump" x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.15" pointer-events="none"/>`+"\n",
			num(x0), num(svgTop), num(max(x1-x0, 1)), num(p.bottom-svgTop), faultColours[ClockJump])
	}
}

// overlays draws what spans every lane: wipes and the phases of the run
// (labels below the lanes, where they do not crowd each other).
func (p *painter) overlays() {
	for _, f := range p.tl.faults {
		if f.class == Wipe {
			x := p.x(f.at)
			p.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#000000" stroke-dasharray="2 2"/>`+"\n",
				num(x), num(svgTop), num(x), num(p.bottom))
		}
	}
	last := -1e9
	for _, ph := range p.tl.phases {
		x := p.x(ph.at)
		p.printf(`<line class="phase" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888888" stroke-dasharray="6 3">`,
			num(x), num(svgTop), num(x), num(p.bottom+4))
		p.title(ph.what + " at " + dur(ph.at))
		p.printf("</line>\n")
		w := float64(len(ph.what)) * charW
		lx, anchor, left := x+2, "start", x+2
		if lx+w > svgWidth {
			lx, anchor, left = x-2, "end", x-2-w
		}
		if left >= last+4 {
			p.printf(`<text x="%s" y="%s" text-anchor="%s" font-size="9" fill="#666666">`, num(lx), num(p.bottom+12), anchor)
			p.text(ph.what)
			p.printf("</text>\n")
			last = left + w
		}
	}
}

// violation draws a red line where the first violation was recorded.
func (p *painter) violation() {
	if !p.tl.failed {
		return
	}
	x := p.x(p.tl.failAt)
	p.printf(`<g class="violation">`)
	p.title(p.tl.failMsg)
	p.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#d62728" stroke-width="2"/>`, num(x), num(svgTop-14), num(x), num(p.bottom+4))
	label := "violation at " + dur(p.tl.failAt)
	anchor, lx := "start", x+3
	if x+3+float64(len(label))*charW > svgWidth {
		anchor, lx = "end", x-3
	}
	p.printf(`<text x="%s" y="%s" text-anchor="%s" font-size="10" font-weight="bold" fill="#d62728">`, num(lx), num(svgTop-14), anchor)
	p.text(label)
	p.printf("</text></g>\n")
}

// printf writes to the picture; the arguments are numbers and names this
// file made, never text from the run (text, title and attr escape that).
func (p *painter) printf(format string, args ...any) { fmt.Fprintf(&p.b, format, args...) }

// text writes s as XML character data, escaped.
func (p *painter) text(s string) { _ = xml.EscapeText(&p.b, []byte(s)) }

// title writes s as the tooltip of the element just opened.
func (p *painter) title(s string) {
	p.b.WriteString("<title>")
	p.text(clip(s, maxTitle))
	p.b.WriteString("</title>")
}

// attr escapes s for an attribute value.
func attr(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// named reports whether msg names label: label occurs in it, not as part
// of a longer word or number ("token 17" is not named by "token 170").
func named(msg, label string) bool {
	if len(label) < 3 {
		return false
	}
	for i := 0; ; {
		j := strings.Index(msg[i:], label)
		if j < 0 {
			return false
		}
		end := i + j + len(label)
		if end == len(msg) || !isWordByte(msg[end]) {
			if start := i + j; start == 0 || !isWordByte(msg[start-1]) || !isWordByte(label[0]) {
				return true
			}
		}
		i += j + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// num formats a coordinate: one decimal, the same on every platform.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// dur formats a simulated time to the millisecond.
func dur(d time.Duration) string { return d.Round(time.Millisecond).String() }

// clip cuts s to at most n bytes, at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// firstLineOf is s up to its first newline.
func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
