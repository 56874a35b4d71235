package chaos_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// The network faults of the schedule. Each falls on one client, drawn
// from the seed, while the other clients go on; it lasts until they have
// made step/2 operations, and is then healed. All three servers are up
// meanwhile.
const (
	// isolate silences every proxy of the client: it hears nothing and
	// nothing it sends arrives, no FIN, no RST, as in a partition that
	// leaves it alone. Its session lives on in the ensemble, which does
	// not hear from it either, for the session timeout.
	isolate = iota
	// cutOne silences the client's proxy to one server: if its
	// connection goes there, the client hears nothing and must find out
	// by its own timeout and move to another server.
	cutOne
	// delay delays each direction of every proxy of the client by 1 to
	// 20ms.
	delay
	faultKinds
)

// cut is network fault k on a client drawn from rng. A silence is healed
// in one of two ways, drawn as well: Open and ResetSilenced, which ends
// the silenced connections with an RST (what a peer learns once the
// network heals and the other side writes), or Open alone, after which
// the client finds its connection dead by its own read timeout (two
// thirds of the session timeout), within the session timeout, and
// reconnects.
func (r *run) cut(k int, rng *rand.Rand) {
	t := r.t
	l := r.links[rng.IntN(len(r.links))]
	kind, reset := rng.IntN(faultKinds), rng.IntN(2) == 0
	what := ""
	switch kind {
	case isolate:
		open := 0
		for _, p := range l.g {
			open += p.Conns()
			p.Silence()
		}
		what = fmt.Sprintf("cut off from every server (%d connections open)", open)
		r.live(open)
	case cutOne:
		i := rng.IntN(len(l.g))
		open := l.g[i].Conns()
		l.g[i].Silence()
		what = fmt.Sprintf("cut off from server %d (%d connections open to it)", i, open)
		r.live(open)
	case delay:
		d := time.Duration(1+rng.IntN(20)) * time.Millisecond
		for _, p := range l.g {
			p.Delay(d)
		}
		what = fmt.Sprintf("delayed by %v each way", d)
	}
	t.Logf("cut %d: %s %s, silently, at %d operations", k, l.name, what, r.ops.Load())
	if err := r.await(step / 2); err != nil {
		r.stop.Store(true)
		r.wg.Wait()
		t.Fatalf("with %s %s: %v: %v", l.name, what, err, errors.Join(r.errs...))
	}
	heal := "healed"
	for _, p := range l.g {
		p.Open()
		p.Delay(0)
		if kind != delay && reset {
			p.ResetSilenced()
		}
	}
	if kind != delay {
		heal += " (its silenced connections reset)"
		if !reset {
			heal = "healed (left to the client's own timeout)"
		}
	}
	t.Logf("cut %d %s at %d operations", k, heal, r.ops.Load())
}

// live counts a silence that fell on at least one open connection (one
// left silent by an earlier cut healed by timeout counts too, until the
// client gives it up): the summary says how many cuts bit.
func (r *run) live(open int) {
	if open > 0 {
		r.cutsLive.Add(1)
	}
}
