package sim

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// RestartNow is the Restart fault aimed by the scenario at a request of
// its own choosing, just sent by client i (call it from Scenario.Wrap's
// Conn once the request is passed on: the first write of a clean-up a
// call left to the background, say): the requests client i has in flight
// are applied, if applied, their replies lost, or not; then the server
// stops, every connection drops, and it starts again d later with its
// data and sessions (Server.Restart: session countdowns pause). Every
// client comes back at the same instant, so the request's retry races
// the other clients' reads of its outcome, where a cut of client i alone
// would have it come back after they had acted on it (taken the item it
// gave back, say). It is noted in the fault log as the injector's
// faults are (aimed by the scenario) and counted as a Restart. It draws
// nothing from the seed's fault streams. It does nothing, and returns
// false, unless the faults are on now and the seed's plan has the
// Restart class, or if client i is not connected, the server is down
// or d is not positive.
func (r *Trial) RestartNow(i int, applied bool, d time.Duration) bool {
	in := r.inj
	if in == nil || !in.active || !in.plan.On.Has(Restart) || r.faultsOff || d <= 0 ||
		i < 0 || i >= len(r.Conns) || !r.Conns[i].Connected() || r.Clock.Now().Before(in.upAt) {
		return false
	}
	in.upAt = r.Clock.Now().Add(d)
	r.Server.Partition(r.Conns[i], d, applied) // applied or not: the Restart's own drops are not
	r.Server.Restart(d)
	in.fired[Restart]++
	in.note(Restart, -1, d, false, fmt.Sprintf("down %s, client %d's requests in flight applied=%v (aimed by the scenario)", d, i, applied))
	return true
}

// AimRestart is RestartNow with its draws made from rnd (a stream of the
// scenario's own: Trial.Rand where nothing else draws from it, say): the
// requests in flight applied in two restarts of three, the server down
// for 1 ms up to a session timeout. It draws only in a seed whose plan
// has the Restart class, in the faults phase, and reports whether it
// restarted the server.
func (r *Trial) AimRestart(rnd *rand.Rand, i int) bool {
	if r.inj == nil || !r.inj.plan.On.Has(Restart) || r.faultsOff {
		return false
	}
	applied := rnd.IntN(3) != 0
	d := time.Millisecond + time.Duration(rnd.Int64N(int64(r.timeout)))
	return r.RestartNow(i, applied, d)
}
