package sim

import (
	"slices"
	"strconv"
	"time"

	"github.com/zkflow/zkflow/task"
)

// lane draws lane li (0: the server's, i+1: client i's) in a group:
// its name, the client's session shades, its bars, its faults.
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

// bars draws the bars of lane li in their rows, each with its times as
// a tooltip and its label where the label fits.
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
		p.printf(`<g class="fault" data-class="%s">`, f.class)
		p.title(f.text)
		if !lasts(f.class) {
			p.glyph(f.class, f.alt, p.x(f.at), cy)
			p.printf("</g>\n")
			continue
		}
		x, h, col := p.x(f.at), 5.0, faultColours[f.class]
		switch f.class {
		case Delay:
			h = 3
		case Restart, ClockJump:
			h = 6
		}
		if f.class == Restart && f.alt {
			col = "#bcbd22" // up without a quorum
		}
		w := max(p.x(p.fend[i])-x, 1.5)
		y := l.top + lanePad + glyphRowH + spanRowH*float64(p.frow[i]) + (spanRowH-h)/2
		p.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`, num(x), num(y), num(w), num(h), col)
		p.printf(`<rect x="%s" y="%s" width="1.5" height="%s" fill="%s"/>`, num(x), num(cy-4), num(y+h-(cy-4)), col)
		p.printf("</g>\n")
	}
}

// glyph draws the mark of a fault of an instant, centred on x, cy: a
// circle for a drop (filled if alt: applied), a cross for an expiry, a
// triangle for a crash, a square for an operator's edit, a diamond for a
// wipe.
func (p *painter) glyph(c FaultClass, alt bool, x, cy float64) {
	col := faultColours[c]
	switch c {
	case DropUnapplied, DropApplied:
		fill := "#ffffff"
		if alt {
			fill = col
		}
		p.printf(`<circle cx="%s" cy="%s" r="3.5" fill="%s" stroke="%s"/>`, num(x), num(cy), fill, col)
	case Expire:
		p.printf(`<path d="M%s %sl7 7m0 -7l-7 7" stroke="%s" stroke-width="2"/>`, num(x-3.5), num(cy-3.5), col)
	case CrashRestart:
		p.printf(`<path d="M%s %sh9l-4.5 8z" fill="%s"/>`, num(x-4.5), num(cy-4), col)
	case Operator:
		p.printf(`<rect x="%s" y="%s" width="7" height="7" fill="%s"/>`, num(x-3.5), num(cy-3.5), col)
	case Wipe:
		p.printf(`<path d="M%s %sl5 5l-5 5l-5 -5z" fill="%s"/>`, num(x), num(cy-5), col)
	}
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

// legendRows is how many rows the legend takes (the picture's height
// counts them before the legend is drawn).
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

// legend draws a swatch and a name for each of legendItems, in rows.
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
		case it.isFault && !lasts(it.fault):
			p.glyph(it.fault, it.fault == DropApplied, x+6, y)
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
