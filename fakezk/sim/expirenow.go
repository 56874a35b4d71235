package sim

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// ExpireNow is the Expire fault aimed by the scenario at a moment of its
// own choosing (just after a reader's snapshot that took in a write, say):
// client i's session expires at once, and, with lag positive, its next
// session starts on a member that lags for lag from then, behind what the
// expired session saw (Server.LagAtNewSession: a new session presents no
// zxid), as one expiry in two of the injector's does; with held, the
// member's view does not drift meanwhile (Server.LagHeld): it catches
// up only with what catches a view up (a sync, a write of the session).
// It is noted in the fault log as the injector's faults are (aimed by
// the scenario) and counted as an Expire (and the lag as a Lag). It
// draws nothing from the seed's fault streams. It does nothing, and
// returns false, unless the faults are on now and the seed's plan has
// the Expire class, or if client i is not connected; the lag is set only
// if the seed draws the lag at a new session (the Lag class, and the
// scenario's reconnect lag on).
func (r *Trial) ExpireNow(i int, lag time.Duration, held bool) bool {
	in := r.inj
	if in == nil || !in.active || !in.plan.On.Has(Expire) || r.faultsOff ||
		i < 0 || i >= len(r.Conns) || !r.Conns[i].Connected() {
		return false
	}
	if lag > 0 && in.rclrng != nil {
		r.Server.LagAtNewSession(r.Conns[i], lag, held)
		in.fired[Lag]++
		in.note(Lag, i, lag, false, fmt.Sprintf("client %d for %s held=%v (its next session, aimed by the scenario)", i, lag, held))
	}
	r.Server.Expire(r.Conns[i])
	in.fired[Expire]++
	in.note(Expire, i, 0, false, fmt.Sprintf("client %d (aimed by the scenario)", i))
	return true
}

// AimExpire is ExpireNow with its draw made from rnd (a stream of the
// scenario's own): the next session lags, for 1 ms up to a session
// timeout, in three expiries of four, its view held in three of four.
// It draws only in a seed whose plan has the Expire class, in the faults
// phase, and reports whether it expired the session.
func (r *Trial) AimExpire(rnd *rand.Rand, i int) bool {
	if r.inj == nil || !r.inj.plan.On.Has(Expire) || r.faultsOff {
		return false
	}
	var lag time.Duration
	held := false
	if rnd.IntN(4) != 0 {
		lag = time.Millisecond + time.Duration(rnd.Int64N(int64(r.timeout)))
		held = rnd.IntN(4) != 0
	}
	return r.ExpireNow(i, lag, held)
}
