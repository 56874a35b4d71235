package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/zkflow/zkflow/task"
)

// aclFault is one ACL the operator changed (the ACL fault): the node at
// path (a client's path) created at czxid, its ACL before, and its ACL
// version once changed, so that the ACL goes back only if no one else
// changed it since.
type aclFault struct {
	path     string
	czxid    int64
	old      []task.ACL
	aversion int32
	back     bool // put back (or the node is gone)
}

// operatorACL is the ACL of a node the clients may not touch: only the
// operator's digest id, which no client presents, has rights.
var operatorACL = []task.ACL{task.DigestACL(task.PermAll, "operator", "operator")}

// readOnlyACL lets the clients read a node and nothing else.
var readOnlyACL = []task.ACL{{Perms: task.PermRead, Scheme: "world", ID: "anyone"}}

// injectACL changes the ACL of a node under Scenario.ACL whose ACL is
// not changed already, for a while, and reports whether it did (false:
// no such node, or the server was down).
func (in *injector) injectACL() bool {
	w, rng := in.w, in.arng
	var cands []string
	for _, p := range w.Paths() { // sorted
		if hasAnyPrefix(p, in.aclPaths) && !in.aclChanged(p) {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return false
	}
	path := cands[rng.IntN(len(cands))]
	acl, kind := operatorACL, "no access"
	if rng.IntN(2) == 0 {
		acl, kind = readOnlyACL, "read only"
	}
	tmo := w.timeout
	d := time.Millisecond + time.Duration(rng.Int64N(int64(2*tmo)))
	return in.setACL(path, acl, d, fmt.Sprintf("%s %s for %s", path, kind, d))
}

// ACLNow is the ACL fault aimed by the scenario at a moment of its own
// choosing (just before a give-back, say): the operator sets the ACL of
// the node at path (a client's path, under Scenario.ACL) to one that
// refuses the clients everything, or, if readOnly, everything but reads,
// and puts the old one back d later, as for the injector's ACL faults
// (ACLsOpen and ACLHidden count it), noted in the fault log as they are.
// It draws nothing from the seed's fault streams. It does nothing, and
// returns false, unless the faults are on now and the seed's plan has
// the ACL class, or if path is not under Scenario.ACL, its ACL is
// changed already, the node is gone or the server is down.
func (r *Trial) ACLNow(path string, readOnly bool, d time.Duration) bool {
	in := r.inj
	if in == nil || !in.active || !in.plan.On.Has(ACL) || r.faultsOff || d <= 0 ||
		!hasAnyPrefix(path, in.aclPaths) || in.aclChanged(path) {
		return false
	}
	acl, kind := operatorACL, "no access"
	if readOnly {
		acl, kind = readOnlyACL, "read only"
	}
	return in.setACL(path, acl, d, fmt.Sprintf("%s %s for %s (aimed by the scenario)", path, kind, d))
}

// AimACL is ACLNow with its draws made from rnd (a scenario actor's, say
// Actor.Rand): one time in two it closes the node at path, to everything
// or to all but reads by a coin, for 1 ms up to a session timeout. It
// reports whether it closed it (false: it drew not to, or ACLNow
// refused).
func (r *Trial) AimACL(rnd *rand.Rand, path string) bool {
	if rnd.IntN(2) != 0 {
		return false
	}
	d := time.Millisecond + time.Duration(rnd.Int64N(int64(r.Timeout())))
	return r.ACLNow(path, rnd.IntN(2) == 0, d)
}

// setACL sets the ACL of the node at path (a client's path) to acl for
// d and notes the fault as what; false if the node is gone or the server
// is down.
func (in *injector) setACL(path string, acl []task.ACL, d time.Duration, what string) bool {
	w := in.w
	sp := w.ServerPath(path)
	old, ok := w.Server.NodeACL(sp)
	if !ok {
		return false
	}
	if err := w.Server.AdminSetACL(sp, acl); err != nil {
		return false
	}
	st, _ := w.Server.NodeStat(sp)
	w.aclSet = append(w.aclSet, touch{at: w.Clock.Now(), path: path, czxid: st.Czxid})
	f := &aclFault{path: path, czxid: st.Czxid, old: old, aversion: st.Aversion}
	in.acls = append(in.acls, f)
	w.Clock.AfterFunc(d, func() { in.putBack(f) })
	in.fired[ACL]++
	in.note(ACL, -1, d, false, what)
	return true
}

// aclChanged reports whether the ACL of the node at path is changed and
// not yet put back.
func (in *injector) aclChanged(path string) bool {
	for _, f := range in.acls {
		if f.path == path && !f.back {
			return true
		}
	}
	return false
}

// putBack puts f's old ACL back, if the node is still the one it changed
// and its ACL is still f's; it tries again every second while the server
// is down.
func (in *injector) putBack(f *aclFault) {
	if f.back {
		return
	}
	w := in.w
	sp := w.ServerPath(f.path)
	st, ok := w.Server.NodeStat(sp)
	if !ok || st.Czxid != f.czxid || st.Aversion != f.aversion {
		f.back = true
		in.forget()
		return
	}
	if err := w.Server.AdminSetACL(sp, f.old); errors.Is(err, task.ErrNotSent) {
		w.Clock.AfterFunc(time.Second, func() { in.putBack(f) })
		return
	}
	f.back = true
	in.forget()
}

// forget drops the faults whose ACL is back.
func (in *injector) forget() {
	in.acls = slices.DeleteFunc(in.acls, func(f *aclFault) bool { return f.back })
	if len(in.acls) == 0 {
		in.aclsBack = in.w.Clock.Now()
	}
}

// ACLsOpen reports whether every ACL an operator changed (the ACL fault)
// is back, or its node gone, and when the last one went back: the zero
// time if none was ever changed. A judge of what a client may only see
// of nodes it may read (a cache's snapshots) excuses what it saw while
// an ACL was changed, and until its watches read their nodes again
// after (task.Watch, twice the session timeout).
func (w *World) ACLsOpen() (since time.Time, open bool) {
	if w.inj == nil {
		return time.Time{}, true
	}
	return w.inj.aclsBack, len(w.inj.acls) == 0
}

// ACLHidden reports whether client i may not yet have seen a change an
// operator's ACL hid from it (the ACL fault): an ACL is changed now, or
// the clients have run less than the watches' re-read period
// (task.RecheckAfter of the session timeout) and a second since the
// last one came back, or since client i's session came back from a
// suspension that began before that (a re-read due while it was away
// was not sent, and is made again a period later: task.Watch). Time the
// clock jumped (Jumped) is time no client ran. A judge of what a client
// may only see of nodes it may read (a cache's snapshots, an observer's
// observations) excuses what it saw then.
func (w *World) ACLHidden(i int) bool {
	since, open := w.ACLsOpen()
	if !open {
		return true
	}
	if since.IsZero() {
		return false
	}
	period := task.RecheckAfter(w.timeout) + time.Second
	ran := func(from, to time.Time) time.Duration { return to.Sub(from) - w.Jumped(from, to) }
	base := since // the clients' catch-up runs a period from here
	if i >= 0 && i < len(w.procs) {
		for _, a := range w.procs[i].away {
			if !a.to.IsZero() && !a.to.After(since) || !a.from.Before(base) && ran(base, a.from) >= period {
				continue // over before, or begun after the catch-up
			}
			if a.to.IsZero() {
				return true
			}
			if a.to.After(base) {
				base = a.to
			}
		}
	}
	return ran(base, w.Clock.Now()) < period
}

// sessionEvent records client i's suspensions (ACLHidden) and the
// process of each of its sessions (Scenario.OwnIncarnations).
func (w *World) sessionEvent(i int, ev task.Event) {
	if ev.Type != task.EventNone {
		return
	}
	p := &w.procs[i]
	n := len(p.away)
	switch ev.State {
	case task.StateSuspended:
		if n == 0 || !p.away[n-1].to.IsZero() {
			p.away = append(p.away, away{from: w.Clock.Now()})
		}
	case task.StateConnected:
		p.connects++
		if ev.SessionID != 0 {
			if w.sessionProc == nil {
				w.sessionProc = map[int64]procID{}
			}
			w.sessionProc[ev.SessionID] = procID{client: i, incarnation: p.incarnation}
		}
		if n > 0 && p.away[n-1].to.IsZero() {
			p.away[n-1].to = w.Clock.Now()
		}
	}
}

// endACLs puts back every ACL still changed, as the faults stop (one the
// server is down for goes back as soon as it is up).
func (in *injector) endACLs() {
	for _, f := range slices.Clone(in.acls) {
		in.putBack(f)
	}
}
