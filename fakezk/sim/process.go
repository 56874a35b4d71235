package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/zkflow/zkflow/task"
)

// proc is what the world knows of client i's process.
type proc struct {
	incarnation int    // processes that died before this one (Crash)
	connects    int    // Connected events its executors heard, over its incarnations (Scenario.OwnIncarnations)
	pauses      int    // pauses this process went through (Pause)
	paused      bool   // frozen now: its executor is not stepped
	thawed      uint64 // the world's step that follows its last thaw (actors' contexts wait for the next)
	away        []away // its sessions' suspensions, in order (ACLHidden)
}

// away is a suspension of a client's session: from its Suspended to its
// next Connected (to zero while it lasts).
type away struct{ from, to time.Time }

// Crash kills client i's process with no cleanup and starts a new one
// with the same identity at once: the old executor is abandoned (never
// stepped, closed or shut down again, so its flows never deliver and its
// timers never fire), its connection is cut (requests in flight applied
// if applied is true, or never) and never heard from again, and its
// session lives on at the server until its timeout expires it; the
// task.Flow bodies suspended in its flows are unwound (Executor.Abandon:
// their deferred functions run, no step does). The new
// process has a new connection and session and an executor with the same
// seed as the old one (Conns[i] and Execs[i] are replaced); it has no
// flow until the caller starts some (a Scenario's Restart hook).
func (w *World) Crash(i int, applied bool) error {
	w.Server.Crash(w.Conns[i], applied)
	w.crashed(i)
	w.killActors(i)
	w.Execs[i].Abandon()
	conn, ex, err := w.newClient(i)
	if err != nil {
		return err
	}
	w.Conns[i], w.Execs[i] = conn, ex
	p := &w.procs[i]
	p.incarnation++
	p.pauses, p.paused = 0, false
	return nil
}

// Pause freezes client i's process for d of the simulated clock: its
// executor is not stepped (its timers and deliveries wait in its queues)
// and its connection is frozen (fakezk.Server.Freeze: the server hears
// nothing and, if d exceeds the session timeout, expires the session).
// When d has passed the process runs on where it stopped: the jobs its
// executor queued meanwhile run first, then what the server held is
// delivered. Pausing a paused client does nothing and returns false.
func (w *World) Pause(i int, d time.Duration) bool {
	p := &w.procs[i]
	if p.paused {
		return false
	}
	w.Server.Freeze(w.Conns[i], d)
	p.paused = true
	p.pauses++
	inc := p.incarnation
	// Armed after the connection's thaw: at the same instant, the thaw
	// runs first.
	w.Clock.AfterFunc(d, func() {
		if w.procs[i].incarnation == inc {
			w.procs[i].paused = false
			if w.act != nil {
				w.procs[i].thawed = w.act.steps + 1
			}
		}
	})
	return true
}

// PauseNow is the Pause fault aimed by the scenario at a moment of its own
// choosing (a give-back just handed to the background, say): it freezes
// client i's process for one and a half session timeouts, so that its
// session expires, and notes it in the fault log as the injector's faults
// are. It does nothing, and returns false, unless the faults are on now
// and the seed's plan has the Pause class, or if client i is paused.
func (r *Trial) PauseNow(i int) bool {
	in := r.inj
	if in == nil || !in.active || !in.plan.On.Has(Pause) || r.faultsOff {
		return false
	}
	d := r.timeout * 3 / 2
	if !r.Pause(i, d) {
		return false
	}
	in.fired[Pause]++
	in.note(Pause, i, d, false, fmt.Sprintf("client %d for %s (aimed by the scenario)", i, d))
	return true
}

// Paused reports whether client i's process is frozen now.
func (w *World) Paused(i int) bool { return w.procs[i].paused }

// Incarnation counts the processes of client i that crashed (0 for the
// first process).
func (w *World) Incarnation(i int) int { return w.procs[i].incarnation }

// OperatorSession reports whether id is a session of the operator (the
// Operator fault's ephemerals), not of a client.
func (w *World) OperatorSession(id int64) bool { return slices.Contains(w.operatorSessions, id) }

// Pauses counts the pauses client i's current process went through.
func (w *World) Pauses(i int) int { return w.procs[i].pauses }

// injectProcess injects a fault of the process and operator classes,
// drawing from the plan's second stream.
func (in *injector) injectProcess(c FaultClass) {
	w, rng := in.w, in.prng
	if len(w.procs) == 0 && c != Operator {
		return
	}
	// Among the world's clients (not executors a test appended to Execs).
	client := rng.IntN(max(len(w.procs), 1))
	tmo := w.timeout
	var what string
	var d time.Duration
	switch c {
	case CrashRestart:
		applied := rng.IntN(2) == 0
		if err := w.Crash(client, applied); err != nil {
			panic(fmt.Sprintf("sim: restarting client %d: %v", client, err)) // executor.New does not fail with a Conn
		}
		in.fired[c]++
		in.note(c, client, 0, applied, fmt.Sprintf("client %d applied=%v", client, applied))
		in.restartLag(client)
		if in.restart != nil {
			in.restart(client)
		}
		return
	case Pause:
		d = tmo*6/5 + time.Duration(rng.Int64N(int64(tmo*9/5)+1))
		if !w.Pause(client, d) {
			return
		}
		what = fmt.Sprintf("client %d for %s", client, d)
	case Operator:
		var ok bool
		if what, ok = in.operate(); !ok {
			return
		}
		client = -1 // an act on the server's tree, by no client
	}
	in.fired[c]++
	in.note(c, client, d, false, what)
}

// restartLag starts, one time in two, the new session of client i, just
// restarted, on a member that lags behind the leader for up to a session
// timeout (Lag, Scenario.NoRestartLag).
func (in *injector) restartLag(i int) {
	if in.rlrng == nil || in.rlrng.IntN(2) != 0 {
		return
	}
	w := in.w
	d := time.Millisecond + time.Duration(in.rlrng.Int64N(int64(w.timeout)))
	w.Server.Lag(w.Conns[i], d) // not started yet: from the start of its session
	in.rlConns = append(in.rlConns, w.Conns[i])
	in.note(Lag, i, d, false, fmt.Sprintf("client %d for %s (restarted)", i, d))
}

// reconnectLag has, one time in two, client i's session come back from
// the cut about to be made (one that applies the requests in flight and
// loses their replies) through a member that lags for up to a session
// timeout: one that has applied the last zxid the client saw, not the
// writes whose replies it lost (Server.LagAtReconnect, Lag,
// Scenario.NoReconnectLag). A listing for a node whose create's reply
// was lost may then miss it.
func (in *injector) reconnectLag(i int) { in.lagBack(in.rclrng, i, "") }

// outageLag is reconnectLag for the cuts of contexts that end in an
// outage and of their aftermath (outage.go), drawn on a stream of its own
// (oclrng: on with the lag class and the blink classes): a call cut off
// with its write applied and its reply lost, whose context ends in the
// cut, leaves its clean-up to read, once back, on a member that may not
// have applied that write.
func (in *injector) outageLag(i int) { in.lagBack(in.oclrng, i, ", after its context's outage") }

func (in *injector) lagBack(r *rand.Rand, i int, why string) {
	if r == nil || r.IntN(2) != 0 {
		return
	}
	w := in.w
	d := time.Millisecond + time.Duration(r.Int64N(int64(w.timeout)))
	w.Server.LagAtReconnect(w.Conns[i], d, false)
	in.fired[Lag]++
	in.note(Lag, i, d, false, fmt.Sprintf("client %d for %s (at its reconnect%s)", i, d, why))
}

// newSessionLag has, one time in two, client i's next session, opened
// after the expiry about to be made, start on a member that lags for up
// to a session timeout, behind what the expired session saw
// (Server.LagAtNewSession; drawn as reconnectLag is, and off with it:
// Scenario.NoReconnectLag). A cache or a config reader that takes the
// new session's first reads for news could go back in time.
func (in *injector) newSessionLag(i int) {
	if in.rclrng == nil || in.rclrng.IntN(2) != 0 {
		return
	}
	w := in.w
	d := time.Millisecond + time.Duration(in.rclrng.Int64N(int64(w.timeout)))
	w.Server.LagAtNewSession(w.Conns[i], d, false)
	in.fired[Lag]++
	in.note(Lag, i, d, false, fmt.Sprintf("client %d for %s (its next session)", i, d))
}

// firedCounts returns the faults fired per class: a restart's lag
// counts once its Conn's session has started (a process that crashed
// again, or a run that ended, before its first session never lagged).
// Called before the world closes.
func (in *injector) firedCounts() [numClasses]int {
	fired := in.fired
	for _, c := range in.rlConns {
		if c.SessionID() != 0 {
			fired[Lag]++
		}
	}
	return fired
}

// operate is one operator's act: delete a leaf under Scenario.Operator
// and, one time in two, create it again; or, with Scenario.OperatorWrites,
// one act in four, write to it. It reports what it did, or false
// if there was nothing to touch or the server was down.
func (in *injector) operate() (string, bool) {
	return in.operateOn(in.prng, nil)
}

// operateOn is operate on the leaves whose Stat pick accepts (nil: any),
// with rng's draws.
func (in *injector) operateOn(rng *rand.Rand, pick func(task.Stat) bool) (string, bool) {
	w := in.w
	var cands []string
	for _, p := range w.Paths() { // sorted; the clients' paths, as Operator names them
		if slices.Contains(in.spare, p) {
			continue
		}
		for _, prefix := range in.operator {
			if !strings.HasPrefix(p, prefix) {
				continue
			}
			if _, st, ok := w.NodeData(p); ok && st.NumChildren == 0 && (pick == nil || pick(st)) {
				cands = append(cands, p)
			}
			break
		}
	}
	if len(cands) == 0 {
		return "", false
	}
	path := cands[rng.IntN(len(cands))]
	data, old, _ := w.NodeData(path)
	if in.writes && rng.IntN(4) == 0 && !hasAnyPrefix(path, in.noWrites) {
		if err := w.Server.AdminSetData(w.ServerPath(path), []byte("operator")); err != nil {
			return "", false
		}
		w.operated = append(w.operated, touch{at: w.Clock.Now(), path: path, czxid: old.Czxid})
		return "wrote " + path, true
	}
	if err := w.Server.AdminDelete(w.ServerPath(path)); err != nil {
		return "", false
	}
	w.operated = append(w.operated, touch{at: w.Clock.Now(), path: path, czxid: old.Czxid})
	what := "deleted " + path
	if rng.IntN(2) == 0 {
		return what, true
	}
	for _, prefix := range in.deleteOnly {
		if strings.HasPrefix(path, prefix) {
			return what + " (not created again: its name is its holder's secret)", true
		}
	}
	if rng.IntN(2) == 0 {
		data = []byte("operator")
	}
	tmo := w.timeout
	if old.EphemeralOwner != 0 && rng.IntN(2) == 0 {
		// An ephemeral of the operator's session (a zkCli that went away):
		// gone when that session expires.
		if in.orphan == 0 || !in.sessionLive(in.orphan) {
			in.orphan = w.Server.OrphanSession(tmo)
			w.operatorSessions = append(w.operatorSessions, in.orphan)
		}
		if err := w.Server.AdminCreate(w.ServerPath(path), data, in.orphan); err == nil {
			what += fmt.Sprintf(", created again as an ephemeral of session %#x (data %q)", in.orphan, data)
		}
		return what, true
	}
	if err := w.Server.AdminCreate(w.ServerPath(path), data, 0); err != nil {
		return what, true
	}
	_, st, _ := w.NodeData(path)
	d := time.Duration(rng.Int64N(int64(2*tmo) + 1))
	what += fmt.Sprintf(", created again as a persistent node (data %q) for %s", data, d)
	in.cleanUp(path, st.Czxid, d)
	return what, true
}

// cleanUp deletes, after d, the persistent node the operator created at
// path (czxid), unless it is gone or is another node by then; it tries
// again every second while the server is down, and leaves a node that has
// children by then (the recipe has taken it as its own). The delete is
// the operator's (Operated, OperatedUnder): a recipe that adopted the
// node (a static registration that wrote its data into it) loses it.
func (in *injector) cleanUp(path string, czxid int64, d time.Duration) {
	w := in.w
	w.Clock.AfterFunc(d, func() {
		if _, now, ok := w.NodeData(path); ok && now.Czxid == czxid {
			err := w.Server.AdminDelete(w.ServerPath(path))
			if errors.Is(err, task.ErrNotSent) {
				in.cleanUp(path, czxid, time.Second)
			} else if err == nil {
				w.operated = append(w.operated, touch{at: w.Clock.Now(), path: path, czxid: czxid})
			}
		}
	})
}

func (in *injector) sessionLive(id int64) bool {
	for _, s := range in.w.Server.Sessions() {
		if s == id {
			return true
		}
	}
	return false
}

// touch is one operator's delete: of the node at path (a client's path)
// created at czxid, at.
type touch struct {
	at    time.Time
	path  string
	czxid int64
}

// OperatedUnder reports whether the operator deleted or wrote a node
// whose path (a client's path) starts with prefix, changed its ACL (the
// acl class: a holder whose fenced write it refuses loses its role), or
// deleted such a directory, between from and to (both included): for a
// judge of a role that rests on more than one node (a master node and
// its lease, say).
func (w *World) OperatedUnder(prefix string, from, to time.Time) bool {
	for _, ts := range [][]touch{w.operated, w.aclSet} {
		for _, t := range ts {
			if strings.HasPrefix(t.path, prefix) && !t.at.Before(from) && !t.at.After(to) {
				return true
			}
		}
	}
	return false
}

// Operated reports whether the operator deleted the node at path (a
// client's path) created at zxid czxid (that incarnation, not a later one at the same path) at
// or before to.
func (w *World) Operated(path string, czxid int64, to time.Time) bool {
	for _, t := range w.operated {
		if t.path == path && t.czxid == czxid && !t.at.After(to) {
			return true
		}
	}
	return false
}

// injectCounter injects a fault of the counter classes on one of
// Scenario.Counters, drawing from the plan's third stream, and reports
// whether it did (false: no directory it could act on, or the server was
// down).
func (in *injector) injectCounter(c FaultClass) bool {
	w, rng := in.w, in.crng
	if len(in.counters) == 0 {
		return false
	}
	dir := in.counters[rng.IntN(len(in.counters))]
	_, st, ok := w.NodeData(dir)
	if !ok {
		return false
	}
	var what string
	switch c {
	case Counters:
		// Clients are shown 2*cversion - numChildren in int32
		// arithmetic; the stored cversion is never negative, so it is
		// that sum halved in uint32.
		stored := int32((uint32(st.Cversion) + uint32(st.NumChildren)) / 2)
		// Below the maximum: the create that reaches it moves the
		// directory's Pzxid and fires its child watches, as the last of
		// two billion creates would (a jump to the maximum itself, which
		// no create makes, would let the next create go unseen by a
		// reader whose last listing predates the jump).
		target := int32(math.MaxInt32 - 1 - rng.IntN(4))
		if stored >= target {
			return false // already there: a counter only goes up
		}
		if err := w.SetCounters(dir, st.Version, target); err != nil {
			return false
		}
		what = fmt.Sprintf("%s cversion %d -> %d", dir, stored, target)
	case EmptyDir:
		if st.NumChildren != 0 || st.EphemeralOwner != 0 {
			return false
		}
		if err := w.Server.AdminDelete(w.ServerPath(dir)); err != nil {
			return false
		}
		w.operated = append(w.operated, touch{at: w.Clock.Now(), path: dir, czxid: st.Czxid})
		what = "deleted " + dir + " (empty; its counter restarts if it is created again)"
	}
	in.fired[c]++
	in.note(c, -1, 0, false, what)
	return true
}

// hasAnyPrefix reports whether p starts with one of prefixes.
func hasAnyPrefix(p string, prefixes []string) bool {
	for _, prefix := range prefixes {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}
