package conformance

import (
	"time"

	"github.com/zkflow/zkflow/task"
)

// ReapCases are the cases about what ZooKeeper's ContainerManager deletes
// and when (the "reap/" group), and about the bounds of a TTL (the "ttl/"
// group). The container manager runs every znode.container.checkIntervalMs
// (a minute by default) and deletes, a minute/maxPerMinute apart, the
// empty containers that have had a child and the childless TTL nodes more
// than their TTL past their mtime.
//
// On a real server a case waits for the deletion itself (a watch), so
// the server wants a short check interval; what a case knows never to be
// deleted it checks after a deletion that the same run or a later one
// made (a barrier: a run collects all of its candidates at its start).
// Cases that check when a deletion happens need a Clocked target.
func ReapCases() []Case {
	return []Case{
		{"reap/container-after-last-child", "a container whose last child is deleted is deleted by the next run, firing NodeDeleted and its parent's NodeChildrenChanged", func(e *Env) {
			rp := reaping(e, false)
			e.Create(e.P("k"), "", task.Container)
			e.Mk("k/a")
			_, cw := e.C.DoW(&task.GetChildrenRequest{Path: e.Base, Watch: true})
			w := e.watchNode(e.P("k"))
			e.Delete(e.P("k/a"))
			e.awaitDeleted(w, e.P("k"), rp.CheckInterval)
			e.OneEvent(e.C, cw, task.EventNodeChildrenChanged, e.Base)
			e.True(!e.Exists(e.P("k")), "container still there")
		}},
		{"reap/container-not-at-once", "a container emptied between runs stays until the next run (a check interval after the last one, or when the last one's pause ends if later) and goes then", func(e *Env) {
			rp := reaping(e, false)
			ck := Need[Clocked](e)
			e.Create(e.P("k"), "", task.Container)
			e.Mk("k/a")
			w := e.watchNode(e.P("k"))
			e.Delete(e.P("k/a"))
			e.True(e.Exists(e.P("k")), "container deleted with its last child")
			e.awaitDeleted(w, e.P("k"), rp.CheckInterval) // a run, now
			e.Create(e.P("j"), "", task.Container)
			e.Mk("j/a")
			wj := e.watchNode(e.P("j"))
			e.Delete(e.P("j/a"))
			ck.Advance(rp.nextRun() - time.Millisecond)
			e.NoEvents(e.C, wj, "container before the next run")
			e.True(e.Exists(e.P("j")), "container deleted before the next run")
			ck.Advance(time.Millisecond)
			e.OneEvent(e.C, wj, task.EventNodeDeleted, e.P("j"))
		}},
		{"reap/container-never-used-kept", "an empty container that never had a child is not deleted (maxNeverUsedIntervalMs 0, the default)", func(e *Env) {
			rp := reaping(e, false)
			if rp.MaxNeverUsed > 0 {
				e.T.Skip("target deletes never-used containers")
			}
			e.Create(e.P("k"), "", task.Container)
			e.reapBarrier(rp)
			e.True(e.Exists(e.P("k")), "never-used container deleted")
			if ck, ok := e.Target.(Clocked); ok {
				ck.Advance(10 * rp.CheckInterval)
				e.True(e.Exists(e.P("k")), "never-used container deleted ten intervals on")
			}
		}},
		{"reap/container-never-used-after-interval", "with maxNeverUsedIntervalMs set, an empty container that never had a child is deleted once more than that has passed since its mtime", func(e *Env) {
			rp := reaping(e, false)
			if rp.MaxNeverUsed <= 0 {
				e.T.Skip("target keeps never-used containers")
			}
			_, st := e.Create(e.P("k"), "", task.Container)
			w := e.watchNode(e.P("k"))
			e.awaitDeleted(w, e.P("k"), rp.MaxNeverUsed+2*rp.CheckInterval)
			if ck, ok := e.Target.(Clocked); ok {
				e.True(ck.Now().UnixMilli()-st.Mtime > rp.MaxNeverUsed.Milliseconds(), "deleted at %s, mtime %d", ck.Now(), st.Mtime)
			}
		}},
		{"reap/only-empty-containers", "a run deletes no container with a child and no emptied persistent node", func(e *Env) {
			rp := reaping(e, false)
			e.Create(e.P("k"), "", task.Container)
			e.Mk("k/a", "p", "p/a")
			e.Delete(e.P("p/a"))
			e.reapBarrier(rp)
			e.True(e.Exists(e.P("k/a")), "container with a child deleted")
			e.True(e.Exists(e.P("p")), "emptied persistent node deleted")
		}},
		{"reap/container-nested", "a container left empty by its child container's deletion is deleted by a later run, not the same one", func(e *Env) {
			rp := reaping(e, false)
			e.Create(e.P("k"), "", task.Container)
			e.Create(e.P("k/j"), "", task.Container)
			e.Mk("k/j/a")
			wk, wj := e.watchNode(e.P("k")), e.watchNode(e.P("k/j"))
			e.Delete(e.P("k/j/a"))
			e.awaitDeleted(wj, e.P("k/j"), rp.CheckInterval)
			ck, clocked := e.Target.(Clocked)
			var tj time.Time
			if clocked {
				tj = ck.Now()
			}
			e.awaitDeleted(wk, e.P("k"), rp.nextRun())
			e.True(wj.FiredAt() < wk.FiredAt(), "outer container deleted before the inner one")
			if clocked {
				e.Eq(ck.Now().Sub(tj), rp.nextRun(), "time between the two deletions")
			}
		}},
		{"reap/rate-limit", "a run deletes one candidate, then pauses a minute/maxPerMinute before the next", func(e *Env) {
			rp := reaping(e, false)
			ck, clocked := e.Target.(Clocked)
			if !clocked && rp.Pause() < 500*time.Millisecond {
				e.T.Skip("pause too short to tell from a real server's timing")
			}
			if rp.Pause() == 0 {
				e.T.Skip("no pause")
			}
			paths := []string{e.P("u1"), e.P("u2")}
			var ws []*Watch
			for _, p := range paths {
				e.Create(p, "", task.Container)
				e.Create(p+"/a", "", task.Persistent)
				ws = append(ws, e.watchNode(p))
			}
			for _, p := range paths {
				e.Delete(p + "/a")
			}
			fired := func() int { return len(ws[0].Events()) + len(ws[1].Events()) }
			e.runUntil("a container deleted", rp.CheckInterval, func() bool { return fired() > 0 })
			var t1 time.Time
			if clocked {
				t1 = ck.Now()
			}
			other := paths[1]
			if len(ws[0].Events()) == 0 {
				other = paths[0]
			}
			// The server pauses after a deletion: a round trip now finds
			// the other container (a real server pauses >= 500ms here).
			e.True(e.Exists(other), "two containers deleted with no pause between them")
			e.runUntil("the other container deleted", rp.Pause(), func() bool { return fired() == 2 })
			if clocked {
				e.Eq(ck.Now().Sub(t1), rp.Pause(), "pause between deletions")
			}
		}},
		{"reap/ttl-expired", "a TTL node with no children is deleted by the first run more than its TTL after its mtime", func(e *Env) {
			rp := reaping(e, true)
			ttl := 200 * time.Millisecond
			st := e.createTTL(e.P("t"), ttl)
			w := e.watchNode(e.P("t"))
			e.awaitDeleted(w, e.P("t"), ttl+2*rp.CheckInterval)
			if ck, ok := e.Target.(Clocked); ok {
				e.True(ck.Now().UnixMilli()-st.Mtime > ttl.Milliseconds(), "deleted at %s, mtime %d", ck.Now(), st.Mtime)
			}
		}},
		{"reap/ttl-not-at-exactly-ttl", "a run at exactly the TTL after the mtime keeps the node (it needs more than its TTL); the next run deletes it", func(e *Env) {
			rp := reaping(e, true)
			ck := Need[Clocked](e)
			e.reapBarrier(rp) // a run, now
			ttl := rp.nextRun()
			st := e.createTTL(e.P("t"), ttl)
			w := e.watchNode(e.P("t"))
			ck.Advance(ttl) // the next run
			e.NoEvents(e.C, w, "TTL node at exactly its TTL")
			e.awaitDeleted(w, e.P("t"), rp.CheckInterval)
			e.True(ck.Now().UnixMilli()-st.Mtime > ttl.Milliseconds(), "deleted at %s, mtime %d", ck.Now(), st.Mtime)
		}},
		{"reap/ttl-counts-from-mtime", "a write moves a TTL node's mtime, and its TTL counts from there, even when it had already expired", func(e *Env) {
			rp := reaping(e, true)
			ck := Need[Clocked](e)
			e.reapBarrier(rp) // a run, now
			ttl := rp.nextRun() / 2
			e.createTTL(e.P("t"), ttl)
			ck.Advance(rp.nextRun() - time.Millisecond)
			st := e.Set(e.P("t"), "x") // expired, not yet deleted: it lives on
			w := e.watchNode(e.P("t"))
			ck.Advance(time.Millisecond) // the next run
			e.NoEvents(e.C, w, "TTL node the run after a write")
			e.True(e.Exists(e.P("t")), "TTL node deleted the run after a write")
			e.awaitDeleted(w, e.P("t"), ttl+rp.CheckInterval)
			e.True(ck.Now().UnixMilli()-st.Mtime > ttl.Milliseconds(), "deleted at %s, mtime %d", ck.Now(), st.Mtime)
		}},
		{"reap/ttl-with-children-kept", "an expired TTL node is kept while it has children and deleted by a run after its last child goes", func(e *Env) {
			rp := reaping(e, true)
			ttl := 200 * time.Millisecond
			e.createTTL(e.P("t"), ttl)
			e.Mk("t/c")
			// b expires no earlier than t: when a run deletes b, it has
			// found t expired too, and kept it for its child.
			e.createTTL(e.P("b"), ttl)
			wb := e.watchNode(e.P("b"))
			e.awaitDeleted(wb, e.P("b"), ttl+2*rp.CheckInterval)
			e.True(e.Exists(e.P("t")), "TTL node with a child deleted")
			wt := e.watchNode(e.P("t"))
			e.Delete(e.P("t/c"))
			e.awaitDeleted(wt, e.P("t"), rp.nextRun())
		}},
		{"reap/ttl-sequential", "a sequential TTL node is deleted as a plain one is", func(e *Env) {
			rp := reaping(e, true)
			ttl := 200 * time.Millisecond
			r := e.C.Do(&task.CreateRequest{Path: e.P("s-"), Mode: task.PersistentSequentialWithTTL, TTL: ttl, ACL: task.OpenACL})
			if r.Err != nil {
				e.T.Fatalf("create: %v", r.Err)
			}
			e.Eq(r.Path, e.P("s-0000000000"), "name")
			w := e.watchNode(r.Path)
			e.awaitDeleted(w, r.Path, ttl+2*rp.CheckInterval)
		}},
		{"ttl/out-of-bounds-refused", "a TTL that is not 1 ms to 2^40-1 ms on the wire is refused before sending (as the Java client does), also inside a multi and whether or not the server has TTL nodes", func(e *Env) {
			for _, ttl := range []time.Duration{0, -time.Second, time.Millisecond - 1, task.MaxTTL + time.Millisecond} {
				for _, mode := range []task.CreateMode{task.PersistentWithTTL, task.PersistentSequentialWithTTL} {
					r := e.C.Do(&task.CreateRequest{Path: e.P("t"), Mode: mode, TTL: ttl, ACL: task.OpenACL})
					e.Err(r.Err, task.ErrInvalidArgument, "create "+mode.String()+" ttl "+ttl.String())
				}
				r := e.C.Do(&task.MultiRequest{Ops: []task.MultiOp{
					&task.CreateRequest{Path: e.P("m"), ACL: task.OpenACL},
					&task.CreateRequest{Path: e.P("t"), Mode: task.PersistentWithTTL, TTL: ttl, ACL: task.OpenACL},
				}})
				e.Err(r.Err, task.ErrInvalidArgument, "multi with ttl "+ttl.String())
			}
			r := e.C.Do(&task.GetChildrenRequest{Path: e.Base})
			e.Eq(sorted(r.Children), []string{}, "children")
		}},
		{"ttl/bounds-accepted", "the server takes a TTL of 1 ms and of 2^40-1 ms (EphemeralType.TTL's maxValue); a fraction of a millisecond is dropped", func(e *Env) {
			reaping(e, true)
			for i, ttl := range []time.Duration{time.Millisecond, task.MaxTTL, task.MaxTTL + time.Millisecond - 1} {
				p := e.P(string(rune('a' + i)))
				r := e.C.Do(&task.CreateRequest{Path: p, Mode: task.PersistentWithTTL, TTL: ttl, ACL: task.OpenACL})
				e.Err(r.Err, nil, "create ttl "+ttl.String())
			}
			r := e.C.Do(&task.CreateRequest{Path: e.P("s-"), Mode: task.PersistentSequentialWithTTL, TTL: task.MaxTTL, ACL: task.OpenACL})
			e.Err(r.Err, nil, "create sequential ttl MaxTTL")
			e.True(e.Exists(e.P("b")), "node with MaxTTL gone")
		}},
	}
}

// nextRun is how long after a run with one deletion the next one starts:
// a check interval, or the deletion's pause if that is longer (a
// fixed-rate timer runs a late run as soon as the last one ends).
func (r Reaping) nextRun() time.Duration { return max(r.CheckInterval, r.Pause()) }

// reaping returns the target's container manager configuration, or skips
// the case (also when it needs TTL nodes and the target has none).
func reaping(e *Env, ttl bool) Reaping {
	e.T.Helper()
	rp := Need[Reaper](e).Reaping()
	if ttl && !rp.TTL {
		e.T.Skip("target has no TTL nodes")
	}
	return rp
}

// createTTL creates a TTL node and returns its Stat.
func (e *Env) createTTL(path string, ttl time.Duration) task.Stat {
	e.T.Helper()
	r := e.C.Do(&task.CreateRequest{Path: path, Mode: task.PersistentWithTTL, TTL: ttl, ACL: task.OpenACL})
	if r.Err != nil {
		e.T.Fatalf("create %s ttl %s: %v", path, ttl, r.Err)
	}
	return r.Stat
}

// watchNode sets an exists watch on path.
func (e *Env) watchNode(path string) *Watch {
	e.T.Helper()
	_, w := e.C.DoW(&task.ExistsRequest{Path: path, Watch: true})
	return w
}

// reapBarrier empties a container that had a child and waits until a run
// deletes it: every node the case made before is then one that run, or
// an earlier one, has looked at. On a Clocked target the clock then
// reads that run's start (a lone candidate: nothing else runs then).
func (e *Env) reapBarrier(rp Reaping) {
	e.T.Helper()
	p := e.P("barrier")
	e.Create(p, "", task.Container)
	e.Create(p+"/a", "", task.Persistent)
	w := e.watchNode(p)
	e.Delete(p + "/a")
	e.awaitDeleted(w, p, rp.CheckInterval+rp.nextRun())
}

// awaitDeleted lets the target's time run until w, an exists watch on
// path, fires, and checks that it fired with NodeDeleted on path.
func (e *Env) awaitDeleted(w *Watch, path string, within time.Duration) {
	e.T.Helper()
	e.runUntil(path+" deleted", within, func() bool { return len(w.Events()) > 0 })
	if ev := w.Events()[0]; ev.Type != task.EventNodeDeleted || ev.Path != path {
		e.T.Errorf("watch got %s %s, want %s %s", ev.Type, ev.Path, task.EventNodeDeleted, path)
	}
}

// runUntil lets the target's time run until cond holds. A Clocked target's
// clock moves from timer to timer, and the case fails if cond needs more
// than within of it; a real server's time runs by itself, and the wait is
// bounded by the harness's limit (cond must turn on a callback of e.C).
func (e *Env) runUntil(what string, within time.Duration, cond func() bool) {
	e.T.Helper()
	ck, ok := e.Target.(Clocked)
	if !ok {
		e.C.wait(what, cond)
		return
	}
	start := ck.Now()
	for {
		e.Target.Settle()
		if cond() {
			return
		}
		if !ck.AdvanceToNext() {
			e.T.Fatalf("waiting for %s: nothing left to happen after %s", what, ck.Now().Sub(start))
		}
		if d := ck.Now().Sub(start); d > within {
			e.Target.Settle()
			e.T.Fatalf("waiting for %s: not within %s (%s on, holds: %v)", what, within, d, cond())
		}
	}
}
