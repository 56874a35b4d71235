package sim

import (
	"fmt"
	"slices"

	"github.com/zkflow/zkflow/task"
)

// Registrations judges what a recipe's Registered promises for the
// ephemeral registrations its clients' actors hold (a group member, a
// discovery instance): false from an expiry until the registration is
// made on the new session. Whenever it looks, a registration that says
// it is registered must be registered on its executor's current session.
//
// Call Start in the scenario's Workload and Restart hooks, for each
// client as it starts and before it registers anything: its judge then
// hears each session event before the registrations do, and looks at
// every event but an expiry (at which the executor has begun the next
// session and the registrations have not heard it yet), so at the state
// the events before left. Hold what an actor registered, Drop it once
// given back, and add Check to the scenario's Invariants (the end of the
// seed). Everything runs on the simulation's goroutine or its actors, in
// lockstep.
type Registrations struct {
	// Seen counts the looks at which a registration was registered, and
	// Expiries the expiries heard while one was held: summed over seeds,
	// for a test to show the judge had something to judge.
	Seen, Expiries int

	held [][]Registered // by client
}

// Registered is a registration as the judge sees it.
type Registered struct {
	Name       string
	Registered func() bool
	Session    func() task.Session // the session of its latest registration
	Done       <-chan struct{}     // closed when it ends (it is then not judged)
}

// Start begins judging client i's registrations on its current
// executor; those of its process before (its executor closed) are
// dropped.
func (g *Registrations) Start(r *Trial, i int) {
	if len(g.held) != len(r.Execs) {
		g.held = make([][]Registered, len(r.Execs))
	}
	g.held[i] = nil
	ex := r.Execs[i]
	ex.Subscribe(func(ev task.Event) {
		if ev.Type != task.EventNone || ev.State == task.StateClosed || r.Execs[i] != ex {
			return // (the process's end: its registrations end with it)
		}
		if ev.State == task.StateExpired {
			if len(g.held[i]) > 0 {
				g.Expiries++
			}
			return
		}
		if err := g.check(r, i); err != nil {
			r.Errorf("at %v: %v", ev.State, err)
		}
	})
}

// Hold judges h, registered by an actor of client i's process inc (the
// incarnation when its registration began: one of a process that has
// crashed since is not judged).
func (g *Registrations) Hold(r *Trial, i, inc int, h Registered) {
	if r.Incarnation(i) == inc {
		g.held[i] = append(g.held[i], h)
	}
}

// Drop stops judging the registration named name of client i's process
// inc (given back).
func (g *Registrations) Drop(r *Trial, i, inc int, name string) {
	if r.Incarnation(i) == inc {
		g.held[i] = slices.DeleteFunc(g.held[i], func(h Registered) bool { return h.Name == name })
	}
}

// Check judges every client's registrations now: an Invariant.
func (g *Registrations) Check(r *Trial) error {
	for i := range g.held {
		if err := g.check(r, i); err != nil {
			return err
		}
	}
	return nil
}

func (g *Registrations) check(r *Trial, i int) error {
	cur := r.Execs[i].SessionScope().Session()
	for _, h := range g.held[i] {
		select {
		case <-h.Done:
			continue
		default:
		}
		if !h.Registered() {
			continue
		}
		if got := h.Session(); got.Epoch != cur.Epoch {
			return fmt.Errorf("client %d: %s Registered() true on session %d (%#x), its executor on session %d since", i, h.Name, got.Epoch, got.ID, cur.Epoch)
		}
		g.Seen++
	}
	return nil
}
