package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// chart is a line chart with points at categorical x positions (client
// counts, quantiles) and a linear or logarithmic y axis, written as SVG.
type chart struct {
	Title, XLabel, YLabel string
	// X are the labels of the x positions, left to right.
	X []string
	// LogY plots y on a log10 scale (every y must then be > 0; points
	// that are not are left out).
	LogY   bool
	Series []series
}

// series is one line; Y[i] belongs to X[i], NaN for no point.
type series struct {
	Name string
	Y    []float64
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

const (
	svgW, svgH             = 640, 400
	padL, padR, padT, padB = 80, 150, 40, 56
)

// writeSVG writes ch as an SVG document.
func (ch chart) writeSVG(w io.Writer) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range ch.Series {
		for _, y := range s.Y {
			if ch.ok(y) {
				lo, hi = math.Min(lo, y), math.Max(hi, y)
			}
		}
	}
	if math.IsInf(lo, 1) { // no points at all
		lo, hi = 1, 10
	}
	ticks, lo, hi := yTicks(lo, hi, ch.LogY)
	plotW, plotH := float64(svgW-padL-padR), float64(svgH-padT-padB)
	yPos := func(y float64) float64 {
		f := (y - lo) / (hi - lo)
		if ch.LogY {
			f = (math.Log10(y) - math.Log10(lo)) / (math.Log10(hi) - math.Log10(lo))
		}
		return float64(padT) + plotH*(1-f)
	}
	xPos := func(i int) float64 {
		if len(ch.X) == 1 {
			return float64(padL) + plotW/2
		}
		return float64(padL) + plotW*float64(i)/float64(len(ch.X)-1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", svgW, svgH, svgW, svgH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgW, svgH)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="14" font-weight="bold">%s</text>`+"\n", padL, esc(ch.Title))
	for _, t := range ticks {
		y := yPos(t)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", padL, y, svgW-padR, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, y+4, esc(human(t)))
	}
	for i, x := range ch.X {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", xPos(i), svgH-padB+18, esc(x))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#444"/>`+"\n", padL, padT, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", float64(padL)+plotW/2, svgH-12, esc(ch.XLabel))
	fmt.Fprintf(&b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">%s</text>`+"\n",
		float64(padT)+plotH/2, float64(padT)+plotH/2, esc(ch.YLabel))
	for si, s := range ch.Series {
		color := palette[si%len(palette)]
		var pts []string
		for i, y := range s.Y {
			if i >= len(ch.X) || !ch.ok(y) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xPos(i), yPos(y)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s %s: %s</title></circle>`+"\n",
				xPos(i), yPos(y), color, esc(s.Name), esc(ch.X[i]), esc(human(y)))
		}
		if len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), color)
		}
		ly := padT + 10 + 20*si
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", svgW-padR+12, ly, svgW-padR+32, ly, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", svgW-padR+38, ly+4, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (ch chart) ok(y float64) bool {
	return !math.IsNaN(y) && !math.IsInf(y, 0) && (!ch.LogY || y > 0)
}

// yTicks returns tick values covering [lo, hi] and the axis range: powers
// of ten (and 2x, 5x when few) on a log axis, 1-2-5 steps on a linear
// one starting at 0.
func yTicks(lo, hi float64, logY bool) ([]float64, float64, float64) {
	if logY {
		return logTicks(lo, hi)
	}
	if hi <= 0 {
		hi = 1
	}
	raw := hi / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	top := math.Ceil(hi/step) * step
	var ticks []float64
	for t := 0.0; t <= top+step/2; t += step {
		ticks = append(ticks, t)
	}
	return ticks, 0, top
}

// logTicks covers [lo, hi] (both > 0) with the 1-2-5 values around them,
// or, over more than three decades, with powers of ten.
func logTicks(lo, hi float64) ([]float64, float64, float64) {
	steps := []float64{1, 2, 5}
	if math.Log10(hi)-math.Log10(lo) > 3 {
		steps = []float64{1}
	}
	const eps = 1e-9
	down := func(v float64) float64 {
		p := math.Pow(10, math.Floor(math.Log10(v)+eps))
		out := p
		for _, s := range steps {
			if s*p <= v*(1+eps) {
				out = s * p
			}
		}
		return out
	}
	up := func(v float64) float64 {
		p := math.Pow(10, math.Floor(math.Log10(v)+eps))
		for _, s := range append(steps, 10) {
			if s*p >= v*(1-eps) {
				return s * p
			}
		}
		return 10 * p
	}
	lo, hi = down(lo), up(hi)
	if hi <= lo {
		hi = up(lo * 1.5)
	}
	var ticks []float64
	for e := math.Floor(math.Log10(lo) + eps); ; e++ {
		p := math.Pow(10, e)
		if p > hi*(1+eps) {
			break
		}
		for _, s := range steps {
			if t := s * p; t >= lo*(1-eps) && t <= hi*(1+eps) {
				ticks = append(ticks, t)
			}
		}
	}
	return ticks, lo, hi
}

// human formats v with a k or M suffix and at most 3 significant digits.
func human(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return trim(v/1e6) + "M"
	case a >= 1e3:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}

func trim(v float64) string {
	s := fmt.Sprintf("%.3g", v)
	if strings.Contains(s, "e") {
		return fmt.Sprintf("%.0f", v)
	}
	return s
}

func esc(s string) string { return html.EscapeString(s) }
