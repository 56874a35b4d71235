package masterworker

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// checkSubmission checks a submission id: a path component that does not
// end in "-", so that no id's task names start with another's prefix and a
// sequence number (taskPrefix("x-") + "-0000000005" is taskPrefix("x")
// followed by what parses as a wrapped sequence number).
func checkSubmission(id string) error {
	if err := checkName("submission id", id); err != nil {
		return err
	}
	if strings.HasSuffix(id, "-") {
		return fmt.Errorf("masterworker: submission id %q ends in \"-\": %w", id, task.ErrInvalidArgument)
	}
	return nil
}

// taskPrefix is the start of the names of the task submitted with id: the
// server appends a sequence number.
func taskPrefix(id string) string { return "task-" + id + "-" }

// Submit returns a task that submits data as a new task under the
// submitter's unique id and succeeds with the task's name, which Wait
// takes. The id must be unique per submission over the system's life,
// not only among the live submitters: Find takes any task of the id for
// this submission's, so an id used again (a process started again that
// counts from 1 again) answers with the old task (Client makes its ids
// so).
//
// The task node is persistent-sequential, named task-<id>-<sequence>.
// When the create's reply is lost (connection loss), the task is looked
// for by its id in /tasks, /assign/* and /status, where the master and a
// worker may already have moved it, and created again only if it is in
// none of them; so a lost reply never submits twice. After any other
// failure whose outcome is unknown (the session expired or the scope
// ended while the create was in flight), run Resubmit with the same id.
//
// The id is one path component and does not end in "-" (the names of id
// "x-" would start with those of id "x", "task-x-", followed by a wrapped,
// negative sequence number).
//
// Errors: task.ErrInvalidArgument for a bad id, task.ErrDataTooLarge for
// data over the server's limit, the scope's error, task.ErrSessionExpired.
func (sys *System) Submit(id string, data []byte) task.Task[string] {
	return sys.submit(id, data, false)
}

// Resubmit is Submit for a submission that may have been made already
// (an earlier Submit or Resubmit with this id ended in an error): it
// looks for the id first and creates the task only if it is not found.
func (sys *System) Resubmit(id string, data []byte) task.Task[string] {
	return sys.submit(id, data, true)
}

func (sys *System) submit(id string, data []byte, lookFirst bool) task.Task[string] {
	if err := checkSubmission(id); err != nil {
		return task.Fail[string](err)
	}
	prefix := taskPrefix(id)
	if canary.On(bugSubmitNoID) {
		prefix = "task-"
	}
	return func(s *task.Scope, k task.Cont[string]) {
		sub := &submitting{sys: sys, s: s, k: k, id: id, prefix: prefix, data: data}
		if lookFirst {
			sub.find()
		} else {
			sub.create()
		}
	}
}

// submitting is one run of submit's task: its create (made once, sent
// again as it is) and the continuation of every attempt.
type submitting struct {
	sys        *System
	s          *task.Scope
	k          task.Cont[string]
	id, prefix string
	data       []byte
	createT    task.Task[string]
	onCreated  task.Cont[string]
}

func (sub *submitting) create() {
	if sub.createT == nil {
		sys := sub.sys
		sub.createT = zkops.Create(sys.TasksPath()+"/"+sub.prefix, sub.data, task.PersistentSequential, sys.acl)
		sub.onCreated = sub.created
	}
	task.Run(sub.s, sub.createT, sub.onCreated)
}

func (sub *submitting) created(p string, err error) {
	s, k := sub.s, sub.k
	switch {
	case err == nil:
		k(task.Base(p), nil)
	case errors.Is(err, task.ErrConnectionLoss):
		if canary.On(bugSubmitNoID) {
			sub.create() // no id to look for: create again
			return
		}
		sub.find()
	case errors.Is(err, task.ErrNotSent):
		sub.create()
	case errors.Is(err, task.ErrNoNode):
		task.Run(s, sub.sys.Setup(), func(_ task.Unit, err error) {
			if err != nil {
				k("", err)
				return
			}
			sub.create()
		})
	default:
		k("", err)
	}
}

func (sub *submitting) find() {
	k := sub.k
	task.Run(sub.s, sub.sys.Find(sub.id), func(name string, err error) {
		switch {
		case err != nil:
			// Not "not found": creating the task again could
			// make the submission twice.
			k("", err)
		case name != "":
			k(name, nil)
		default:
			sub.create()
		}
	})
}

// Find returns a task that looks for the task submitted with id in
// /tasks, /assign/* and /status and succeeds with its name, or with ""
// if it is in none of them. It syncs first (the sync and the first
// listing are sent together: one round trip): the session's server may lag
// behind the leader, and a listing from before the task was created
// (by a create whose reply was lost, or by a process that ran before
// this one) would not show it. A task only leaves /tasks by a change to
// /tasks, so Find reads /tasks first and, after the other directories,
// lists /tasks again: the task is there, or /tasks is the same
// incarnation (czxid) with the same pzxid (no child deleted since), or
// Find reads everything again. A tasks directory that is missing (an
// operator deleted it while it was empty) is made again first.
func (sys *System) Find(id string) task.Task[string] {
	if err := checkSubmission(id); err != nil {
		return task.Fail[string](err)
	}
	prefix := taskPrefix(id)
	match := func(names []string) string {
		for _, n := range names {
			if seq, ok := strings.CutPrefix(n, prefix); ok && isSeq(seq) {
				return n
			}
		}
		return ""
	}
	list := c.Retry(task.Children(sys.TasksPath()), retry)
	// The first listing goes out with the sync, in one round trip
	// (zkops.AfterSync); a listing again needs none: it follows our own
	// earlier reads and writes on the session.
	first := c.Retry(zkops.AfterSync(sys.TasksPath(), task.Children(sys.TasksPath())), retry)
	if canary.On(bugFindWithoutSync) {
		first = list
	}
	return func(s *task.Scope, k task.Cont[string]) {
		var look func(task.Task[task.ChildList])
		look = func(read task.Task[task.ChildList]) {
			task.Run(s, read, func(tl task.ChildList, err error) {
				if errors.Is(err, task.ErrNoNode) {
					// Deleted while empty: the task may still be assigned
					// or done. Make it again, so that its Stat tells, at
					// the end, whether a task moved back meanwhile.
					task.Run(s, sys.mkdir(sys.TasksPath()), func(_ task.Unit, err error) {
						if err != nil {
							k("", err)
							return
						}
						look(list)
					})
					return
				}
				if err != nil {
					k("", err)
					return
				}
				if n := match(tl.Names); n != "" {
					k(n, nil)
					return
				}
				task.Run(s, sys.findAssigned(match), func(n string, err error) {
					if err != nil || n != "" {
						k(n, err)
						return
					}
					task.Run(s, c.Retry(task.Children(sys.StatusRoot()), retry), func(sl task.ChildList, err error) {
						if errors.Is(err, task.ErrNoNode) {
							err = nil // deleted while empty (an operator): no status
						}
						if err != nil {
							k("", err)
							return
						}
						if n := match(sl.Names); n != "" {
							k(n, nil)
							return
						}
						// A task moved back to /tasks meanwhile is there
						// now, or left it since (a delete moves the
						// pzxid). A create does not move it once the
						// directory's counter has run out, so /tasks is
						// listed again, not only its Stat compared.
						task.Run(s, list, func(again task.ChildList, err error) {
							switch {
							case errors.Is(err, task.ErrNoNode):
								look(list) // deleted meanwhile: make it again, start over
							case err != nil:
								k("", err)
							case match(again.Names) != "":
								k(match(again.Names), nil)
							case again.Stat.Czxid != tl.Stat.Czxid || again.Stat.Pzxid != tl.Stat.Pzxid:
								// /tasks changed meanwhile (or is another
								// incarnation): the task may have moved.
								look(list)
							default:
								k("", nil)
							}
						})
					})
				})
			})
		}
		look(first)
	}
}

// isSeq reports whether s is a sequence number as ZooKeeper appends it:
// %010d of a Java int, ten digits, or a minus sign and up to ten digits
// once the counter has wrapped in the server's pipeline.
func isSeq(s string) bool {
	if len(s) < 10 || len(s) > 11 || s[0] == '+' || len(s) == 11 && s[0] != '-' {
		return false
	}
	n, err := strconv.ParseInt(s, 10, 32)
	// Exactly as Java's %010d writes n: "-0000000005" is no number it writes.
	return err == nil && s == fmt.Sprintf("%010d", n)
}

// findAssigned looks through every assignment directory.
func (sys *System) findAssigned(match func([]string) string) task.Task[string] {
	// A missing /assign (deleted while empty, by an operator) has no
	// assignment.
	roots := c.Catch(c.Retry(task.Children(sys.AssignRoot()), retry), func(err error) task.Task[task.ChildList] {
		if errors.Is(err, task.ErrNoNode) {
			return task.Value(task.ChildList{})
		}
		return task.Fail[task.ChildList](err)
	})
	return c.Then(roots, func(cl task.ChildList) task.Task[string] {
		dirs := slices.Clone(cl.Names)
		slices.Sort(dirs)
		return c.Map(c.Loop(loopState{}, func(st loopState) bool { return st.found == "" && st.i < len(dirs) },
			func(st loopState) task.Task[loopState] {
				read := c.Catch(c.Retry(task.Children(sys.AssignPath(dirs[st.i])), retry), func(err error) task.Task[task.ChildList] {
					if errors.Is(err, task.ErrNoNode) {
						return task.Value(task.ChildList{})
					}
					return task.Fail[task.ChildList](err)
				})
				return c.Map(read, func(l task.ChildList) loopState { return loopState{i: st.i + 1, found: match(l.Names)} })
			}), func(st loopState) string { return st.found })
	})
}

type loopState struct {
	i     int
	found string
}

// Wait returns a task that waits for the status of the named task and
// succeeds with it. It reads the status; while there is none, it sets an
// exists watch on /status/<name> and reads again when the watch fires, so
// that a Wait leaves no watch behind on a status it has read (but when the
// status is made between its read and its watch); connection loss is
// retried, and a watch another user of the session takes away
// (RemoveWatches) is one more wake-up. It fails with ErrBadStatus for a status not in the recipe's
// format, and with the scope's error or task.ErrSessionExpired (run it
// again: waiting has no side effect).
func (sys *System) Wait(name string) task.Task[Result] {
	if err := checkName("task name", name); err != nil {
		return task.Fail[Result](err)
	}
	p := sys.StatusPath(name)
	return func(s *task.Scope, k task.Cont[Result]) {
		w := &waiting{s: s, k: k, p: p}
		w.look()
	}
}

// waiting is one run of Wait's task: it reads the status, and watches for
// it while it is missing, one request at a time; its requests' tasks and
// continuations are made once, for every look.
type waiting struct {
	s *task.Scope
	k task.Cont[Result]
	p string

	get     task.Task[task.Data]      // the status read, retried
	existsW task.Task[task.StatWatch] // its exists with a watch, retried
	onGot   task.Cont[task.Data]
	onStat  task.Cont[task.StatWatch]
	onFired task.Cont[task.Event]
}

func (w *waiting) read(d task.Data) {
	res, err := decodeResult(w.p, d.Data)
	w.k(res, err)
}

func (w *waiting) look() {
	if canary.On(bugWaitWatchesStatus) {
		w.watch() // as it was: a watch first, on a status made or not
		return
	}
	if w.get == nil {
		w.get, w.onGot = c.Retry(task.Get(w.p), retry), w.got
	}
	task.Run(w.s, w.get, w.onGot)
}

func (w *waiting) got(d task.Data, err error) {
	switch {
	case err == nil:
		w.read(d)
	case errors.Is(err, task.ErrNoNode):
		w.watch()
	default:
		w.k(Result{}, err)
	}
}

func (w *waiting) watch() {
	if w.existsW == nil {
		w.existsW, w.onStat, w.onFired = c.Retry(task.ExistsW(w.p), retry), w.stat, w.fired
	}
	task.Run(w.s, w.existsW, w.onStat)
}

func (w *waiting) stat(sw task.StatWatch, err error) {
	s, k := w.s, w.k
	switch {
	case err != nil:
		k(Result{}, err)
	case sw.Stat != nil && canary.On(bugWaitWatchesStatus):
		task.Run(s, c.Retry(task.Get(w.p), retry), func(d task.Data, err error) {
			if err != nil {
				k(Result{}, err)
				return
			}
			w.read(d)
		})
	case sw.Stat != nil:
		w.look() // made since the read (its data watch stays: the one left behind)
	default:
		task.Run(s, sw.Watch.Wait(), w.onFired)
	}
}

func (w *waiting) fired(_ task.Event, err error) {
	// A watch another user of the session took away (RemoveWatches: a
	// cache of the status's node stopping) is one more wake-up: read
	// again.
	if err != nil && !errors.Is(err, task.ErrWatchRemoved) {
		w.k(Result{}, err)
		return
	}
	w.look()
}

// Status returns a task that reads the status of the named task, if it
// has one: ok is false when it has none yet.
func (sys *System) Status(name string) task.Task[StatusRead] {
	if err := checkName("task name", name); err != nil {
		return task.Fail[StatusRead](err)
	}
	p := sys.StatusPath(name)
	return c.Catch(c.Then(c.Retry(task.Get(p), retry), func(d task.Data) task.Task[StatusRead] {
		res, err := decodeResult(p, d.Data)
		if err != nil {
			return task.Fail[StatusRead](err)
		}
		return task.Value(StatusRead{Result: res, OK: true})
	}), func(err error) task.Task[StatusRead] {
		if errors.Is(err, task.ErrNoNode) {
			return task.Value(StatusRead{})
		}
		return task.Fail[StatusRead](err)
	})
}

// StatusRead is the outcome of Status.
type StatusRead struct {
	Result
	OK bool // the task has a status
}
