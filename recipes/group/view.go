package group

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Known bugs of the member view (see internal/canary).
const (
	// bugViewNoRearm: after a session expiry (which ends every watch) the
	// view does not list and watch again on the new session.
	bugViewNoRearm canary.Name = "group/view-no-rearm-after-expiry"
	// bugStaleList: the view lists the children, then sets the watch with
	// a second listing, and reports the first: a change between the two is
	// missed until the next one.
	bugStaleList canary.Name = "group/view-stale-list"
	// bugMergedList: on each listing after the first, the view first
	// reports the union of what it reported last and the new listing (a
	// set the directory may never have had), then the listing itself: it
	// converges, but one report was never the server's.
	bugMergedList canary.Name = "group/view-merged-list"
	// bugListWithoutSync: a round lists the directory without a sync
	// first: a server lagging behind the leader answers with a listing
	// from before the previous report reached the client.
	bugListWithoutSync canary.Name = "group/view-list-without-sync"
)

// ErrStopped is View.Err after Stop.
var ErrStopped = errors.New("group: view stopped")

// Change is one report of a View: the members (ids, sorted) as of a
// listing of the directory, and who joined and who left since the
// previous report (sorted). The first report has every member in Added.
type Change struct {
	Members        []string
	Added, Removed []string
}

// View follows a group's members on one executor, across session
// expiries, until Stop. Its accessors are safe from any goroutine.
type View struct {
	g      *Group
	report func(Change)

	mu   sync.Mutex
	cur  []string // as last reported
	err  error
	done chan struct{}

	// executor goroutine only
	rt       task.Runtime
	sessID   int64
	reported bool
	first    task.Cont[*View] // resumes the Watch task at the first report
	unsub    func()
	follower *task.Scope
	spare    []string // the next listing's buffer: publish sorts it there and keeps it as cur only if it changed
}

// Members returns the members as last reported (sorted).
func (v *View) Members() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.cur)
}

// Done is closed when the view ends: Stop (Err is ErrStopped), the
// executor closed (task.ErrClosed), or an error no retry settles.
func (v *View) Done() <-chan struct{} { return v.done }

// Err is nil while the view runs, then why it ended.
func (v *View) Err() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.err
}

// Watch returns a task that starts a View of the group's members and
// succeeds with it once the first listing has been reported. report is
// called on the executor goroutine, once per change, in order: first with
// the members at the start, then whenever a listing differs from the
// previous report. It must not block. The view lists the directory with a
// watch, and after every notification, and on every new session after an
// expiry, lists and watches again, so it converges to the server's state
// after every fault. A missing directory has no members (the view waits
// for it to be created). If the caller's scope ends before the first
// report, the view is stopped and Watch fails with the scope's error.
func (g *Group) Watch(report func(Change)) task.Task[*View] {
	if g == nil || g.dir == "" {
		return task.Fail[*View](errNil("Group"))
	}
	if report == nil {
		return task.Fail[*View](fmt.Errorf("group: nil report function: %w", task.ErrInvalidArgument))
	}
	return func(s *task.Scope, k task.Cont[*View]) {
		v := &View{g: g, report: report, done: make(chan struct{}), rt: s.Runtime()}
		task.Suspend(s, k, func(resume task.Cont[*View]) func() {
			v.first = resume
			v.unsub = v.rt.Subscribe(v.onSession)
			v.follow()
			return func() { v.end(s.Err()) } // abandoned before the first report
		})
	}
}

// Stop returns a task that stops the view. It is idempotent.
func (v *View) Stop() task.Task[task.Unit] {
	if v == nil || v.done == nil {
		return task.Fail[task.Unit](errNil("View"))
	}
	return task.Func(func(*task.Scope) (task.Unit, error) {
		v.end(ErrStopped)
		return task.Unit{}, nil
	})
}

func (v *View) onSession(ev task.Event) {
	if ev.Type != task.EventNone {
		return
	}
	switch ev.State {
	case task.StateConnected:
		if ev.SessionID == v.sessID || canary.On(bugViewNoRearm) {
			return
		}
		if f := v.follower; f != nil { // not yet ended by the expiry
			v.follower = nil
			f.Cancel(task.ErrSessionExpired)
		}
		v.follow()
	case task.StateClosed:
		v.end(task.ErrClosed)
	}
}

// follow starts the follower flow on the current session.
func (v *View) follow() {
	sess, _ := v.rt.Current()
	v.sessID = sess.ID
	f := v.rt.SessionScope().Child()
	v.follower = f
	round := v.round() // a value: built once, run every round
	loop := c.Loop(true, func(b bool) bool { return b }, func(bool) task.Task[bool] { return round })
	v.rt.Schedule(func() {
		task.RunIn(f, loop, func(_ bool, err error) {
			if v.follower == f {
				v.follower = nil
			}
			switch {
			case errors.Is(err, task.ErrCanceled), errors.Is(err, task.ErrSessionExpired):
				// stopped, or the next session's follower takes over
			case errors.Is(err, task.ErrClosed):
				v.end(task.ErrClosed)
			case err != nil:
				v.end(fmt.Errorf("group: view of %s: %w", v.g.dir, err))
			}
		})
	})
}

// round lists the directory with a watch, reports, and waits for the
// watch (a watch another user of the session removed ends the round as a
// notification does: the next lists and watches again). A missing
// directory is reported as empty and watched with exists until it is
// created. The listing follows a sync: the session's server may lag
// behind the leader, and its listing could be older than the previous
// report (the package doc promises one the server had after it).
func (v *View) round() task.Task[bool] {
	listSync, listPlain, existsW := v.g.viewTasks()
	r := &viewRound{v: v, listW: listSync, existsW: existsW}
	if canary.On(bugListWithoutSync) {
		r.listW = listPlain
	}
	r.onList, r.onFired = r.listed, r.fired
	return r.run
}

// viewRound is round's task for one follower: its loop runs one round at
// a time, each once the one before has ended, so the round under way
// keeps its scope and continuation here and its continuations are made
// once, not at each round.
type viewRound struct {
	v       *View
	listW   task.Task[task.ChildrenWatch]
	existsW task.Task[task.StatWatch]

	s     *task.Scope
	k     task.Cont[bool]
	prev  []string // with stale, reported in the listing's place (bugStaleList)
	stale bool

	onList  task.Cont[task.ChildrenWatch] // listed
	onFired task.Cont[task.Event]         // fired
}

func (r *viewRound) run(s *task.Scope, k task.Cont[bool]) {
	r.s, r.k = s, k
	if !canary.On(bugStaleList) {
		r.list(nil, false)
		return
	}
	task.Run(s, c.Retry(task.Children(r.v.g.dir), retry), func(cl task.ChildList, err error) {
		if err != nil && !errors.Is(err, task.ErrNoNode) {
			k(false, err)
			return
		}
		r.list(cl.Names, err == nil)
	})
}

// list is one round's listing (round), reported, then its watch waited
// for; with stale, prev is reported in its place (bugStaleList).
func (r *viewRound) list(prev []string, stale bool) {
	r.prev, r.stale = prev, stale
	task.Run(r.s, r.listW, r.onList)
}

func (r *viewRound) listed(cw task.ChildrenWatch, err error) {
	v, s, k := r.v, r.s, r.k
	switch {
	case errors.Is(err, task.ErrNoNode):
		task.Run(s, r.existsW, func(sw task.StatWatch, err error) {
			if err != nil {
				k(false, err)
				return
			}
			if sw.Stat != nil {
				k(true, nil) // created meanwhile: list again
				return
			}
			v.publish(nil)
			task.Run(s, sw.Watch.Wait(), func(_ task.Event, err error) { k(true, wakeUp(err)) })
		})
	case err != nil:
		k(false, err)
	default:
		names := cw.Names
		if r.stale {
			names = r.prev
		}
		if v.reported && canary.On(bugMergedList) {
			v.publish(append(slices.Clone(v.Members()), names...))
		}
		v.publish(names)
		task.Run(s, cw.Watch.Wait(), r.onFired)
	}
}

// fired ends the round at its watch's notification, or at its end: a
// watch another user of the session took away (RemoveWatches) is one more
// wake-up, and the next round lists (and watches) again.
func (r *viewRound) fired(_ task.Event, err error) { r.k(true, wakeUp(err)) }

// viewTasks returns the listings of the group's directory after a sync
// and without, and its exists, with their retries: built at the first
// call (a Group may be shared by executors), the same values after.
func (g *Group) viewTasks() (listSync, listPlain task.Task[task.ChildrenWatch], existsW task.Task[task.StatWatch]) {
	g.viewOnce.Do(func() {
		dir := g.dir
		g.listSync = c.Retry(zkops.AfterSync(dir, task.ChildrenW(dir)), retry)
		g.listPlain = c.Retry(task.ChildrenW(dir), retry)
		g.existsW = c.Retry(task.ExistsW(dir), retry)
	})
	return g.listSync, g.listPlain, g.existsW
}

// publish reports names if they differ from the last report (or if there
// was none yet). Executor goroutine.
func (v *View) publish(names []string) {
	var next []string
	if len(names) == 0 {
		next = slices.Clone(names) // nil or empty as names is
	} else {
		next = append(v.spare[:0], names...)
	}
	slices.Sort(next)
	next = slices.Compact(next)
	v.mu.Lock()
	if v.err != nil {
		v.mu.Unlock()
		return
	}
	prev := v.cur
	v.mu.Unlock()
	added, removed := diff(prev, next)
	if v.reported && len(added) == 0 && len(removed) == 0 {
		if len(names) > 0 {
			v.spare = next // not kept: the next listing's buffer
		}
		return
	}
	v.mu.Lock()
	v.cur = next
	v.mu.Unlock()
	if len(names) > 0 {
		v.spare = nil
	}
	if cap(prev) > 0 && len(names) > 0 {
		v.spare = prev[:0] // the accessors copy cur under mu: nobody else holds it
	}
	v.reported = true
	v.report(Change{Members: slices.Clone(next), Added: added, Removed: removed})
	if f := v.first; f != nil {
		v.first = nil
		f(v, nil)
	}
}

// diff returns what is in b and not in a, and what is in a and not in b;
// both are sorted, nil when empty. They are counted first and made in one
// allocation (each with its own capacity: appending to one never writes
// the other).
func diff(a, b []string) (added, removed []string) {
	nAdded, nRemoved := 0, 0
	walkDiff(a, b, func(string) { nRemoved++ }, func(string) { nAdded++ })
	if nAdded+nRemoved == 0 {
		return nil, nil
	}
	buf := make([]string, 0, nAdded+nRemoved)
	if nAdded > 0 {
		added = buf[:0:nAdded]
	}
	if nRemoved > 0 {
		removed = buf[nAdded:nAdded:cap(buf)]
	}
	walkDiff(a, b, func(x string) { removed = append(removed, x) }, func(x string) { added = append(added, x) })
	return added, removed
}

// walkDiff calls onRemoved with each element of a not in b and onAdded
// with each of b not in a, in order; a and b are sorted.
func walkDiff(a, b []string, onRemoved, onAdded func(string)) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			onRemoved(a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			onAdded(b[j])
			j++
		default:
			i++
			j++
		}
	}
}

// end ends the view with err unless it already ended. Executor goroutine.
func (v *View) end(err error) {
	if err == nil {
		err = ErrStopped
	}
	v.mu.Lock()
	if v.err == nil {
		v.err = err
		close(v.done)
	}
	v.mu.Unlock()
	if v.unsub != nil {
		v.unsub()
		v.unsub = nil
	}
	if f := v.follower; f != nil {
		v.follower = nil
		f.Cancel(task.ErrCanceled)
	}
	// A view that ends before its first report (its first listing
	// refused, say) ends the Watch task with the view's error.
	if first := v.first; first != nil {
		v.first = nil
		first(nil, v.Err())
	}
}
