package sim

import (
	"cmp"
	"slices"
	"strconv"
	"time"
)

// lane is one lane's place in the picture.
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
	case PartitionShort, PartitionLong, Delay, Pause, Restart, ClockJump, ContextOutage, Blink:
		return true
	}
	return false
}

// x is where simulated time d is on the picture: the run's length fills
// the plot's width.
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
