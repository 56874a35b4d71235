package sim

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zkflow/zkflow/task"
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
func (tl *Timeline) WriteSVG(w io.Writer) error {
	var p painter
	p.tl = tl
	p.draw()
	_, err := w.Write(p.b.Bytes())
	return err
}

type painter struct {
	tl     *Timeline
	b      bytes.Buffer
	lanes  []lane          // lanes[0] is the server's, lanes[i+1] client i's
	row    []int           // per span: its row in its lane
	frow   []int           // per fault that lasts: its row in its lane
	fend   []time.Duration // per fault: when it ended (a pause ends at a crash)
	colour map[string]string
	kinds  []string // bar kinds in order of first appearance
	bottom float64  // the bottom of the last lane
}

type lane struct {
	name        string
	top, height float64
	frows, rows int // rows of faults that last, rows of bars
}

// barsTop is where the lane's first row of bars starts.
func (l lane) barsTop() float64 { return l.top + lanePad + glyphRowH + spanRowH*float64(l.frows) }

// lasts reports whether a fault of class c is drawn as a span.
func lasts(c FaultClass) bool {
	switch c {
	case PartitionShort, PartitionLong, Delay, Pause, Restart, ClockJump:
		return true
	}
	return false
}

func (p *painter) x(d time.Duration) float64 {
	end := max(p.tl.end, time.Millisecond)
	d = min(max(d, 0), end)
	return svgLeft + svgPlot*float64(d)/float64(end)
}

// laneOf returns the index in p.lanes of client (-1: the server).
func laneOf(client int) int { return client + 1 }

// layout makes the lanes, gives each bar kind its colour, packs the bars
// and the faults that last into rows, and places the lanes.
func (p *painter) layout() {
	p.makeLanes()
	p.colour = map[string]string{}
	for _, s := range p.tl.spans {
		if _, ok := p.colour[s.kind]; ok {
			continue
		}
		c, ok := knownKinds[s.kind]
		if !ok {
			c = moreKinds[len(p.kinds)%len(moreKinds)]
		}
		p.colour[s.kind] = c
		p.kinds = append(p.kinds, s.kind)
	}
	p.packBars()
	p.packFaults()
	y := svgTop
	for i := range p.lanes {
		l := &p.lanes[i]
		l.top = y
		l.height = 2*lanePad + glyphRowH + spanRowH*float64(l.frows) + barRowH*float64(max(l.rows, 1))
		y += l.height
	}
	p.bottom = y
}

// makeLanes makes a lane for the server and one per client: the world's
// clients, and any other a bar, a fault or a session names.
func (p *painter) makeLanes() {
	tl := p.tl
	n := tl.clients
	for _, s := range tl.spans {
		n = max(n, s.client+1)
	}
	for _, f := range tl.faults {
		n = max(n, f.client+1)
	}
	for _, s := range tl.sessions {
		n = max(n, s.client+1)
	}
	p.lanes = make([]lane, n+1)
	p.lanes[0].name = "server"
	for i := 1; i <= n; i++ {
		p.lanes[i].name = "client " + strconv.Itoa(i-1)
	}
}

// pack puts an interval from start to end in the first row of rows (the
// end of each row's last interval) free at start, a new row if none is
// and there are fewer than maxRows, else the last row; it returns the
// rows and the row taken.
func pack(rows []time.Duration, start, end time.Duration) ([]time.Duration, int) {
	if r := slices.IndexFunc(rows, func(e time.Duration) bool { return e <= start }); r >= 0 {
		rows[r] = end
		return rows, r
	}
	if len(rows) < maxRows {
		return append(rows, end), len(rows)
	}
	rows[maxRows-1] = max(rows[maxRows-1], end)
	return rows, maxRows - 1
}

// packBars gives each bar its row in its lane: per kind in the order the
// kinds first appear, the bars in order of start.
func (p *painter) packBars() {
	tl := p.tl
	p.row = make([]int, len(tl.spans))
	order := make([]int, len(tl.spans))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(tl.spans[a].start, tl.spans[b].start) })
	for li := range p.lanes {
		base := 0
		for _, k := range p.kinds {
			var rows []time.Duration
			for _, i := range order {
				if s := tl.spans[i]; laneOf(s.client) == li && s.kind == k {
					var r int
					rows, r = pack(rows, s.start, s.end)
					p.row[i] = base + r
				}
			}
			base += len(rows)
		}
		p.lanes[li].rows = base
	}
}

// packFaults gives each fault that lasts its row in its lane (they come
// in time order) and its end: a client's partition, delay or pause ends
// early when its process crashes (the new process has a connection of
// its own).
func (p *painter) packFaults() {
	tl := p.tl
	p.frow = make([]int, len(tl.faults))
	p.fend = make([]time.Duration, len(tl.faults))
	rows := make([][]time.Duration, len(p.lanes))
	for i, f := range tl.faults {
		if !lasts(f.class) {
			continue
		}
		p.fend[i] = f.at + f.d
		if f.client >= 0 {
			for _, g := range tl.faults[i+1:] {
				if g.class == CrashRestart && g.client == f.client && g.at < p.fend[i] {
					p.fend[i] = g.at
					break
				}
			}
		}
		li := laneOf(f.client)
		rows[li], p.frow[i] = pack(rows[li], f.at, p.fend[i])
	}
	for li := range p.lanes {
		p.lanes[li].frows = len(rows[li])
	}
}

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

func (p *painter) lane(li int) {
	l := p.lanes[li]
	client := li - 1
	id := "lane-server"
	if client >= 0 {
		id = "lane-client-" + strconv.Itoa(client)
	}
	p.printf(`<g class="lane" id="%s">`+"\n", id)
	p.printf(`<text x="8" y="%s" font-weight="bold">`, num(l.top+lanePad+glyphRowH))
	p.text(l.name)
	p.printf("</text>\n")
	if client >= 0 {
		p.sessions(client, l)
	}
	p.bars(li, l)
	p.faultMarks(client, l)
	p.printf("</g>\n")
}

// sessions shades the lane where client's session was suspended or
// expired (until the next session), and marks each expiry.
func (p *painter) sessions(client int, l lane) {
	type iv struct {
		state      task.State
		start, end time.Duration
	}
	var ivs []iv
	var expiries []time.Duration
	for _, m := range p.tl.sessions {
		if m.client != client {
			continue
		}
		if m.state == task.StateExpired {
			expiries = append(expiries, m.at)
		}
		if n := len(ivs); n > 0 {
			if ivs[n-1].state == m.state {
				continue
			}
			ivs[n-1].end = m.at
		}
		ivs = append(ivs, iv{state: m.state, start: m.at, end: p.tl.end})
	}
	for _, v := range ivs {
		var fill, what string
		switch v.state {
		case task.StateSuspended:
			fill, what = "#fdd9a0", "suspended"
		case task.StateExpired:
			fill, what = "#f8b4b4", "expired"
		default:
			continue
		}
		x0, x1 := p.x(v.start), p.x(v.end)
		if x1-x0 < 0.5 {
			continue
		}
		p.printf(`<rect class="session" data-state="%s" x="%s" y="%s" width="%s" height="%s" fill="%s">`,
			what, num(x0), num(l.top), num(x1-x0), num(l.height), fill)
		p.title("client " + strconv.Itoa(client) + " " + what + " " + dur(v.start) + " – " + dur(v.end))
		p.printf("</rect>\n")
	}
	for _, at := range expiries {
		x := p.x(at)
		p.printf(`<line class="session" data-state="expired" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#b2182b" stroke-width="1.5">`,
			num(x), num(l.top), num(x), num(l.top+l.height))
		p.title("client " + strconv.Itoa(client) + " learns its session expired at " + dur(at))
		p.printf("</line>\n")
	}
}

func (p *painter) bars(li int, l lane) {
	for i, s := range p.tl.spans {
		if laneOf(s.client) != li {
			continue
		}
		x0, x1 := p.x(s.start), p.x(s.end)
		w := x1 - x0
		if w > 2 {
			w -= 0.6 // a gap between bars that touch
		}
		w = max(w, 1)
		y := l.barsTop() + barRowH*float64(p.row[i]) + 1
		h := barRowH - 2
		tip := s.kind + " " + s.label + " on client " + strconv.Itoa(s.client) + ": " + dur(s.start) + " – " + dur(s.end) + " (" + dur(s.end-s.start) + ")"
		extra := ""
		switch {
		case s.open:
			tip += ", still open at the end of the run"
			extra = ` stroke="#333333" stroke-dasharray="3 2"`
		case s.note != "":
			tip += ", ended: " + s.note
		}
		if p.tl.failed && named(p.tl.failMsg, s.label) {
			tip += " (named by the violation)"
			extra = ` stroke="#d62728" stroke-width="1.5"`
		}
		p.printf(`<rect class="bar" data-kind="%s" x="%s" y="%s" width="%s" height="%s" fill="%s"%s>`,
			attr(s.kind), num(x0), num(y), num(w), num(h), p.colour[s.kind], extra)
		p.title(tip)
		p.printf("</rect>\n")
		if s.note != "" && !s.open {
			p.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#000000" stroke-width="2"/>`+"\n",
				num(x0+w), num(y-1), num(x0+w), num(y+h+1))
		}
		if s.label != "" && float64(len(s.label))*charW+4 <= w {
			p.printf(`<text x="%s" y="%s" font-size="9" fill="#ffffff" pointer-events="none">`, num(x0+2), num(y+h-2))
			p.text(s.label)
			p.printf("</text>\n")
		}
	}
}

// faultMarks draws the faults on client's lane (-1: the server's), in
// the lane's top row.
func (p *painter) faultMarks(client int, l lane) {
	cy := l.top + lanePad + glyphRowH/2
	for i, f := range p.tl.faults {
		if f.client != client {
			continue
		}
		x := p.x(f.at)
		col := faultColours[f.class]
		open := func(extra string) {
			p.printf(`<g class="fault" data-class="%s"%s>`, f.class, extra)
			p.title(f.text)
		}
		switch f.class {
		case DropUnapplied, DropApplied:
			fill := "#ffffff"
			if f.alt {
				fill = col
			}
			open("")
			p.printf(`<circle cx="%s" cy="%s" r="3.5" fill="%s" stroke="%s"/>`, num(x), num(cy), fill, col)
		case Expire:
			open("")
			p.printf(`<path d="M%s %sl7 7m0 -7l-7 7" stroke="%s" stroke-width="2"/>`, num(x-3.5), num(cy-3.5), col)
		case CrashRestart:
			open("")
			p.printf(`<path d="M%s %sh9l-4.5 8z" fill="%s"/>`, num(x-4.5), num(cy-4), col)
		case Operator:
			open("")
			p.printf(`<rect x="%s" y="%s" width="7" height="7" fill="%s"/>`, num(x-3.5), num(cy-3.5), col)
		case Wipe:
			open("")
			p.printf(`<path d="M%s %sl5 5l-5 5l-5 -5z" fill="%s"/>`, num(x), num(cy-5), col)
		case PartitionShort, PartitionLong, Delay, Pause, Restart, ClockJump:
			h := 5.0
			switch f.class {
			case Delay:
				h = 3
			case Restart, ClockJump:
				h = 6
			}
			if f.class == Restart && f.alt {
				col = "#bcbd22" // up without a quorum
			}
			open("")
			w := max(p.x(p.fend[i])-x, 1.5)
			y := l.top + lanePad + glyphRowH + spanRowH*float64(p.frow[i]) + (spanRowH-h)/2
			p.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`, num(x), num(y), num(w), num(h), col)
			p.printf(`<rect x="%s" y="%s" width="1.5" height="%s" fill="%s"/>`, num(x), num(cy-4), num(y+h-(cy-4)), col)
		default:
			continue
		}
		p.printf("</g>\n")
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

// legendItems lists what the picture shows, in a fixed order: the fault
// classes present, the bar kinds, the session shades.
func (p *painter) legendItems() []legendItem {
	var items []legendItem
	for _, c := range Classes() {
		if slices.ContainsFunc(p.tl.faults, func(f faultMark) bool { return f.class == c }) {
			label := c.String()
			if c == Restart {
				label = "restart (down / no quorum)"
			}
			items = append(items, legendItem{label: label, colour: faultColours[c], fault: c, isFault: true})
		}
	}
	for _, k := range p.kinds {
		items = append(items, legendItem{label: k, colour: p.colour[k]})
	}
	items = append(items, legendItem{label: "suspended", colour: "#fdd9a0"}, legendItem{label: "expired", colour: "#f8b4b4"})
	return items
}

type legendItem struct {
	label, colour string
	fault         FaultClass
	isFault       bool
}

func (it legendItem) width() float64 { return 18 + float64(len(it.label))*charW + 16 }

func (p *painter) legendRows() int {
	rows, x := 1, svgLeft
	for _, it := range p.legendItems() {
		if x+it.width() > svgWidth-svgRight {
			rows, x = rows+1, svgLeft
		}
		x += it.width()
	}
	return rows
}

func (p *painter) legend() {
	y := p.bottom + 30
	x := svgLeft
	p.printf(`<g class="legend">` + "\n")
	p.printf(`<text x="8" y="%s" fill="#555555">legend</text>`+"\n", num(y+4))
	for _, it := range p.legendItems() {
		if x+it.width() > svgWidth-svgRight {
			x, y = svgLeft, y+16
		}
		switch {
		case it.isFault && (it.fault == DropUnapplied || it.fault == DropApplied):
			fill := "#ffffff"
			if it.fault == DropApplied {
				fill = it.colour
			}
			p.printf(`<circle cx="%s" cy="%s" r="3.5" fill="%s" stroke="%s"/>`, num(x+6), num(y), fill, it.colour)
		case it.isFault && it.fault == Expire:
			p.printf(`<path d="M%s %sl7 7m0 -7l-7 7" stroke="%s" stroke-width="2"/>`, num(x+2.5), num(y-3.5), it.colour)
		case it.isFault && it.fault == CrashRestart:
			p.printf(`<path d="M%s %sh9l-4.5 8z" fill="%s"/>`, num(x+1.5), num(y-4), it.colour)
		case it.isFault && it.fault == Wipe:
			p.printf(`<path d="M%s %sl5 5l-5 5l-5 -5z" fill="%s"/>`, num(x+6), num(y-5), it.colour)
		case it.isFault && it.fault == Operator:
			p.printf(`<rect x="%s" y="%s" width="7" height="7" fill="%s"/>`, num(x+2.5), num(y-3.5), it.colour)
		case it.isFault && it.fault == Restart:
			p.printf(`<rect x="%s" y="%s" width="7" height="8" fill="%s"/><rect x="%s" y="%s" width="7" height="8" fill="#bcbd22"/>`,
				num(x), num(y-4), it.colour, num(x+7), num(y-4))
		default:
			p.printf(`<rect x="%s" y="%s" width="14" height="8" fill="%s"/>`, num(x), num(y-4), it.colour)
		}
		p.printf(`<text x="%s" y="%s">`, num(x+18), num(y+3.5))
		p.text(it.label)
		p.printf("</text>\n")
		x += it.width()
	}
	p.printf("</g>\n")
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

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
