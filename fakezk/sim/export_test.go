package sim

import (
	"errors"
	"io"
)

// What the package's external tests reach that users do not need: how
// Explore picks and roots its seeds, seed searches and timelines.

const (
	FixedFrom    = fixedFrom
	ExploreProcs = exploreProcs
)

var (
	Explored       = explored
	RunTimeline    = runTimeline
	FirstFailure   = firstFailure
	InJobStream    = inJobStream
	RegressionErrs = regressionErrs
)

// FiredString is Stats' count of faults fired per class, "class=n".
func FiredString(s Stats) string { return s.firedString() }

// WriteTimeline draws res's timeline (RunTimeline) as an SVG picture.
func WriteTimeline(res Result, w io.Writer) error {
	if res.timeline == nil {
		return errors.New("no timeline recorded")
	}
	return res.timeline.WriteSVG(w)
}

// Ctx is an actor's context type, for the tests of its AfterFunc.
type Ctx = actorCtx
