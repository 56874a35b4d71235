package sim

import (
	"strconv"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// timeline is what one seed's picture is drawn from (WriteSVG): the
// faults where they struck, each client's session states, the bars the
// scenario and the checkers recorded (World.Span, World.OpenSpan: lock
// holds, leadership terms, memberships, task executions), the phases of
// the run and the first violation. runTimeline records one; a run that
// does not record one (RunSeed, Explore) pays for none of it: every
// recording call is a nil check.
//
// Everything in it is on the simulated clock, in the order the run made
// it, so two recordings of a seed are the same and draw the same bytes.
type timeline struct {
	scenario string
	seed     uint64
	plan     Plan
	root     string
	clients  int // the world's clients (lanes; more if a span names another)
	end      time.Duration
	fired    int

	spans    []span
	faults   []faultMark
	sessions []sessionMark
	phases   []phaseMark

	failed  bool
	kind    FailureKind
	failAt  time.Duration
	failMsg string
}

// span is one bar on a client's lane.
type span struct {
	client     int
	kind       string
	label      string
	start, end time.Duration
	open       bool   // not ended yet (at the end of the run: still open)
	note       string // how it ended, when the world ended it ("process crashed")
}

// faultMark is one fault injected: at, on client (-1: the server, or
// every client for a clock jump), lasting d for the classes that last.
type faultMark struct {
	at     time.Duration
	class  FaultClass
	client int
	d      time.Duration
	alt    bool   // drops, partitions, crashes: requests in flight applied; restart: no quorum (up)
	text   string // the fault log's line
}

// sessionMark is a session event an executor published.
type sessionMark struct {
	at     time.Duration
	client int
	state  task.State
}

// phaseMark is the start of a phase of the run (faults on, faults off...).
type phaseMark struct {
	at   time.Duration
	what string
}

// SpanID names a bar opened with OpenSpan, for CloseSpan. The zero
// SpanID (what OpenSpan returns when nothing is recorded) closes nothing.
type SpanID int

// Recording reports whether the run records a timeline (-sim.svg,
// runTimeline): a scenario can skip building a costly label when not.
func (w *World) Recording() bool { return w.tl != nil }

// Span records a bar on client's lane of the seed's timeline (-1: the
// server's), of a kind ("lock", "leader", "member", "task": one colour
// and one row of the lane per kind) with a label, from start to end. When
// the run records no timeline it does nothing.
func (w *World) Span(client int, kind, label string, start, end time.Time) {
	if w.tl == nil || client < -1 {
		return
	}
	w.tl.spans = append(w.tl.spans, span{client: client, kind: kind, label: label,
		start: start.Sub(fakezk.Epoch), end: end.Sub(fakezk.Epoch)})
}

// OpenSpan starts a bar on client's lane now, as Span, and returns what
// CloseSpan ends it with. A bar still open when client's process crashes
// (World.Crash) ends there; one still open at the end of the run is drawn
// as open. When the run records no timeline it returns 0 and does nothing.
func (w *World) OpenSpan(client int, kind, label string) SpanID {
	if w.tl == nil || client < -1 {
		return 0
	}
	w.tl.spans = append(w.tl.spans, span{client: client, kind: kind, label: label, start: w.elapsed(), open: true})
	return SpanID(len(w.tl.spans))
}

// CloseSpan ends the bar id now; it does nothing for 0 or a bar already
// ended.
func (w *World) CloseSpan(id SpanID) { w.closeSpan(id, "") }

func (w *World) closeSpan(id SpanID, note string) {
	if w.tl == nil || id <= 0 || int(id) > len(w.tl.spans) {
		return
	}
	s := &w.tl.spans[id-1]
	if s.open {
		s.end, s.open, s.note = w.elapsed(), false, note
	}
}

// elapsed is the simulated time since the world was built.
func (w *World) elapsed() time.Duration { return w.Clock.Now().Sub(fakezk.Epoch) }

// crashed ends, on the timeline, the bars client's dead process had open.
func (w *World) crashed(client int) {
	if w.tl == nil {
		return
	}
	for i := range w.tl.spans {
		if s := &w.tl.spans[i]; s.open && s.client == client {
			s.end, s.open, s.note = w.elapsed(), false, "process crashed"
		}
	}
}

// follow records client's session events on the timeline.
func (w *World) follow(client int, ex *executor.Executor) {
	if w.tl == nil {
		return
	}
	ex.Subscribe(func(ev task.Event) {
		if ev.Type == task.EventNone {
			w.tl.sessions = append(w.tl.sessions, sessionMark{at: w.elapsed(), client: client, state: ev.State})
		}
	})
}

// phase records the start of a phase of the run.
func (w *World) phase(what string) {
	if w.tl != nil {
		w.tl.phases = append(w.tl.phases, phaseMark{at: w.elapsed(), what: what})
	}
}

// fault records an injected fault (the injector's note).
func (w *World) fault(c FaultClass, client int, d time.Duration, alt bool, line string) {
	if w.tl != nil {
		w.tl.faults = append(w.tl.faults, faultMark{at: w.elapsed(), class: c, client: client, d: d, alt: alt, text: line})
	}
}

// finish closes the timeline with the run's outcome.
func (tl *timeline) finish(res *Result, clients int) {
	tl.scenario, tl.seed, tl.plan, tl.root = res.Scenario, res.Seed, res.Plan, res.Root
	tl.end = res.SimTime
	for _, n := range res.Fired {
		tl.fired += n
	}
	tl.clients = clients
	for i := range tl.spans {
		if s := &tl.spans[i]; s.open {
			s.end = tl.end
		}
	}
	if res.Err != nil {
		tl.failed, tl.kind, tl.failAt, tl.failMsg = true, res.Kind, res.FailedAt, res.Err.Error()
	}
}

// leaderLabel is the label of a leadership term's bar.
func leaderLabel(czxid int64) string {
	if czxid == 0 {
		return "leader"
	}
	return "token " + strconv.FormatInt(czxid, 10)
}
