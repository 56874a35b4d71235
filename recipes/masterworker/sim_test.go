package masterworker_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// The simulated system: clients 0 and 1 run masters, 2..4 workers, 5 and
// 6 submit tasks. A worker whose session ends is replaced by a new worker
// with a new id (a crashed machine replaced), so the tasks left in the
// old one's assignment directory must be moved by the primary.
const (
	simMasters    = 2
	simWorkers    = 3
	simSubmitters = 2
	simClients    = simMasters + simWorkers + simSubmitters
	simRoot       = "/mw"
	simDuration   = 30 * time.Second
)

// mwSim is the state of one seed's run, judged as it goes and at the end.
type mwSim struct {
	sys *masterworker.System
	r   *sim.Trial

	masters []*masterworker.Master
	runs    []*executor.Flow // per master: its Run
	// stopping: per master, its Run was canceled by the workload (a
	// Serve whose context ended) and starts again later.
	stopping []bool
	stops    int
	refused  int               // masters, workers, submits and waits an ACL refused
	where    map[string]string // scratch for instant: task name -> /tasks or /assign/<w>
	assignAt map[string]string // instant's "assign/<w>" by worker directory, made once each
	// instant's view of the statuses, kept from check to check: the
	// submissions whose status it has seen (task name -> submission id, status path)
	// and those it has not (submission id -> task name). A seen status
	// stays seen while /status keeps its czxid and its count of deleted
	// children (cversion - numChildren, twice the deletes, also in int32
	// arithmetic); when either moves every submission is looked up again.
	doneSeen  map[string]seenTask
	undone    map[string]undoneTask
	doneStamp [2]int64
	names     map[string]string // submission id -> task name, once Submit returned
	results   map[string]int    // submission id -> statuses seen by Wait
	waiting   []int             // per submitter: submissions not yet answered
	executed  map[string]int    // task name -> handler runs
	// ran: task name -> the submission (the job's data) and the
	// outcomes its handler runs gave (fateOK, fateFail, fateBig): a
	// status must be one of them.
	ran map[string]*runs
	// canceled: per client, its worker's handler failed with
	// task.ErrCanceled, which stops the worker (the package doc,
	// Handler): the process runs it again under the same id.
	canceled []bool
	// foreign: per client, its worker's handler failed with
	// task.ErrSessionExpired of something else it uses (fateForeign),
	// its own session live.
	foreign      []bool
	failovers    int   // master runs that ended with the session
	crashed      int   // worker runs that ended with the session
	killed       int   // sessions the workload expired
	targeted     int   // connections dropped under a request
	checks       int   // instants checked
	skipped      int64 // zxids passed without a check in between
	lastZxid     int64
	handlerStops int   // worker runs their handler stopped
	workerN      []int // per client: the number of the worker it runs (its id)
	subJ         []int // per submitter: the submission under way
	// blocking: the submitters use the blocking Client
	// (newBlockingMWScenario); orphans are its submissions whose Submit
	// never returned a name (their process crashed, or an ACL refused
	// it): each may have made a task, with one status.
	blocking bool
	orphans  map[string]bool
	// subLive: the blocking submitters' actors running (counted once
	// they run). Masters and workers (blocking scenario) Serve until
	// the faults have stopped, the submitters are done and no task is
	// left; serves counts their Serve calls, serveEnds those their
	// context ended.
	subLive, serves, serveEnds int
	// fence judges the moves from the server's journal (fencesim_test.go).
	fence fenceJudge
	// What the masters' Stats (assignments, moves back) and the
	// workers' Completed reported, summed over the Masters and Workers
	// (counted: each once, when its runs ended, its process crashed or
	// the seed ended): at most the moves the journal saw, and the
	// statuses on the server. workers: per client, its Worker.
	statAssigned, statMoved, completed int64
	counted                            map[any]bool
	workers                            []*masterworker.Worker
	// busy: per worker id, the job its handler runs (one at a time).
	busy map[string]string

	// summed over seeds by the test
	stats *simTotals
}

type simTotals struct {
	seeds, submitted, reruns, failovers, crashes, killed, targeted, checks, rerun, stops, refused int
	serves, serveEnds                                                                             int
	moves, terms, zxids, skipped                                                                  int64
	handlerStops                                                                                  int
	fates                                                                                         [numFates]int // tasks whose handler gave each outcome at least once
}

func newMWScenario(tot *simTotals) sim.Scenario {
	_, sc := newMWSim(tot)
	return sc
}

// newBlockingMWScenario is the scenario with the submitters on the
// blocking Client (Submit, then Wait) instead of the task face: each
// submitter process makes one Client, with the id "client-<i>" in every
// incarnation, as a process started again with its host name does; a
// crashed process's submission under way is abandoned (its task, if
// made, still gets one status), and the next process submits new ones.
// Each status a Wait returns must be its own submission's. One call in
// three has its context end mid-way (after steps or an instant drawn, in
// an outage, inside a job): a Submit so ended is an orphan too, and a
// Wait so ended is called again. The masters and workers run on the
// blocking face too: each process calls Master.Serve or Worker.Serve
// (its one Master or Worker) with a context that ends before the call,
// after steps or an instant drawn, in an outage or inside a job, and
// Serves it again a while later, until the submitters are done and no
// task is left; then, every Serve ended by its context, no master node
// and no worker registration may be left (their sessions live on: Serve
// gives both up as it ends).
func newBlockingMWScenario(tot *simTotals) sim.Scenario {
	s, sc := newMWSim(tot)
	sc.Name = "masterworker/blocking"
	sc.Regressions = []sim.Regression{
		{Seed: 19, ReconnectLag: true, Why: "a Wait's context ended as its session expired (in the job that reported the expiry): Wait returned task.ErrSessionExpired, which it promises the caller never sees (executor.AwaitAcrossExpiry now returns the context's end); since the histories moved the seed no longer reaches that schedule (it passes with the canary executor/expiry-over-ended-context on): 26000030 does"},
		{Seed: 26000030, Canary: "executor/expiry-over-ended-context", Why: "the same: a Wait's context ended as an expiry ended its flow"},
	}
	sc.InJobEnds, sc.OutageEnds, sc.ActorLag = true, true, true
	sc.Duration = 20 * time.Second
	// No one waits for an abandoned submission's status: the run also
	// waits until no task is left unassigned or assigned.
	quiet := sc.Quiesce
	sc.Quiesce = func(r *sim.Trial) bool {
		if !quiet(r) || r.Actors() > 0 || len(r.Children(simRoot+"/tasks")) > 0 || len(r.Children(simRoot+"/workers")) > 0 {
			return false
		}
		if _, ok := r.NodeStat(simRoot + "/master"); ok {
			return false
		}
		for _, w := range r.Children(simRoot + "/assign") {
			if len(r.Children(simRoot+"/assign/"+w)) > 0 {
				return false
			}
		}
		return true
	}
	setup := sc.Setup
	sc.Setup = func(r *sim.Trial) error {
		err := setup(r)
		s.blocking, s.orphans = true, map[string]bool{}
		return err
	}
	return sc
}

func newMWSim(tot *simTotals) (*mwSim, sim.Scenario) {
	s := &mwSim{stats: tot}
	return s, sim.Scenario{
		Name:    "masterworker",
		Clients: simClients,
		Regressions: []sim.Regression{
			{Seed: 9000105, Why: "liveness, acl class: the primary's cache of /workers ended on a read an ACL refused; the term went on with a snapshot nothing updated, and dead workers kept their tasks (the term now ends with the cache's error)"},
			{Seed: 5767, NoACL: true, Why: "invariant: read status task-c5n0-0000000000: session expired"},
			{Seed: 631, NoACL: true, Why: "liveness: the operator deleted the workers' registrations; the workers never registered again, no task was assigned"},
			{Seed: 1000000108, NoACL: true, Why: "liveness: as seed 631"},
			{Seed: 1, NoACL: true, Why: "safety: the empty /tasks deleted; the primary's list of it failed with no node and the master ended"},
			{Seed: 24689397390939, NoACL: true, Why: "liveness: /tasks's counter run out (a create no longer moves its pzxid); the primary's read of /tasks was answered before a partition and handled after the reconnect, which cleared the re-read the reconnect had asked for; its watch never fired again"},
			{Seed: 8, NoACL: true, Why: "safety: a dead worker's empty assignment directory deleted after the primary listed /assign; its list failed with no node and the master ended"},
			{Seed: 1000000124, NoACL: true, NoRestartLag: true, Why: "safety: as seed 8"},
			{Seed: 1000000061, NoACL: true, Why: "liveness: /tasks's counter run out; a task created while the primary was cut off was never listed (its child watch not fired again on reconnect)"},
			{Seed: 277973293976963, NoACL: true, NoRestartLag: true, Why: "safety: a submitter restarted onto a member that had not applied its predecessor's create; Resubmit's Find listed without a sync, found nothing and submitted again: two statuses for one submission (since the histories moved the seed no longer reaches that schedule: it passes with the canary masterworker/find-without-sync on; 58500394 does)"},
			{Seed: 58500394, ReconnectLag: true, Blinks: true, Why: "safety: a submitter's session expired while it was cut off, after its submission's task had been assigned and given a status; its next session started on a member far behind (the lag class, at its next session), and the Find before submitting again listed /tasks, /assign and /status there with no sync, found none of them and submitted the task again: two statuses for one submission (Find now syncs first; canary masterworker/find-without-sync). Since a worker asks the executor whether its session ended (a handler's session error) the seed no longer reaches that schedule (it passes with the canary on); 78000114 does"},
			{Seed: 78000114, ReconnectLag: true, Blinks: true, Canary: string(masterworker.BugFindWithoutSync), Why: "drawn with every fault class, as 58500394 was: with the canary masterworker/find-without-sync on (a Find before submitting again that lists with no sync), a submission gets two statuses"},
		},
		SessionTimeout: 4 * time.Second,
		Server:         fakezk.Config{Journal: func(c fakezk.Commit) { s.fence.journal(c) }},
		Faults:         sim.Faults{Allow: sim.AllFaults | sim.CounterFaults | sim.Of(sim.ACL), MaxRate: 0.02},
		// An operator closes any node for a while, or makes it read only:
		// the directories, the master node, registrations, tasks,
		// assignments, statuses.
		ACL:      []string{simRoot},
		Duration: simDuration,
		Recovery: 2 * time.Minute,
		Wrap: func(i int, conn *fakezk.Conn) task.Conn {
			return &checkedConn{Conn: conn, check: func() { s.instant() }, sent: func(req task.Request) { s.target(conn, req) }}
		},
		Setup: func(r *sim.Trial) error {
			sys, err := masterworker.New(simRoot)
			if err != nil {
				return err
			}
			*s = mwSim{sys: sys, r: r, stats: tot, names: map[string]string{}, results: map[string]int{},
				doneSeen: map[string]seenTask{}, undone: map[string]undoneTask{},
				waiting: make([]int, simSubmitters), executed: map[string]int{}, ran: map[string]*runs{}, canceled: make([]bool, simClients), foreign: make([]bool, simClients), masters: make([]*masterworker.Master, simMasters),
				runs: make([]*executor.Flow, simMasters), stopping: make([]bool, simMasters),
				workerN: make([]int, simClients), subJ: make([]int, simSubmitters), busy: map[string]string{},
				counted: map[any]bool{}, workers: make([]*masterworker.Worker, simClients)}
			_, err = sim.Run(r.World, 0, sys.Setup())
			s.fence.start(r)
			return err
		},
		Workload: s.workload,
		Restart:  func(_ *sim.Trial, i int) { s.restart(i) },
		// The master node and worker registrations (a task's node is
		// the task: an operator who deletes one loses it).
		Operator:   []string{simRoot + "/master", simRoot + "/workers/"},
		OwnDeletes: []string{simRoot + "/workers"},
		// Task names come from the tasks directory's counter; the
		// assignment directories count too (their child watches are
		// what the workers follow): those of the first workers.
		Counters: mwCounters(),
		Live: func(r *sim.Trial) bool {
			for i := range simSubmitters {
				if !r.ProgressedSinceFaults(simMasters + simWorkers + i) {
					return false
				}
			}
			return true
		},
		// Once submitters stop, every submission gets its status: a task
		// stuck with a dead worker fails here.
		Quiesce: func(r *sim.Trial) bool {
			for _, n := range s.waiting {
				if n > 0 {
					return false
				}
			}
			return true
		},
		Invariants: []sim.Invariant{
			sim.InvariantFunc(func(r *sim.Trial) error { return s.final() }),
			// What background work may report: a session's end, or an
			// operator's ACL refusing a registration's give-up.
			sim.NoClientErrors(task.ErrSessionExpired, task.ErrClosed, task.ErrNoAuth),
		},
	}
}

// mwCounters lists the directories the counter classes act on: /tasks,
// /workers (its counter run out, a registration moves no Pzxid), /assign
// and /status (deleted while empty) and the assignment directories of the workers' first three ids on
// each worker client (a directory that does not exist is left alone).
func mwCounters() []string {
	dirs := []string{simRoot + "/tasks", simRoot + "/workers", simRoot + "/assign", simRoot + "/status"}
	for i := range simWorkers {
		for n := range 3 {
			dirs = append(dirs, fmt.Sprintf("%s/assign/w%d-%d", simRoot, simMasters+i, n))
		}
	}
	return dirs
}

// checkedConn checks the tree at every instant a client acts or hears
// from the server (each request sent, each response, event and
// notification delivered).
type checkedConn struct {
	*fakezk.Conn
	check func()
	sent  func(task.Request)
}

func (c *checkedConn) Start(events func(task.Event)) error {
	return c.Conn.Start(func(ev task.Event) { c.check(); events(ev) })
}

func (c *checkedConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	c.check()
	var w func(task.Event)
	if watch != nil {
		w = func(ev task.Event) { c.check(); watch(ev) }
	}
	c.Conn.Do(req, func(r task.Response) { c.check(); done(r) }, w)
	c.sent(req)
}

// target drops, while the faults are on and with a chance drawn from the
// seed, the connection of a client that has just sent one of the
// requests whose lost reply the recipe must settle: a submission's
// create, a multi (assignment, move back, status), a re-read of /workers
// with a watch. Half the drops apply the request first.
func (s *mwSim) target(conn *fakezk.Conn, req task.Request) {
	if s.r == nil || !s.r.FaultsOn() || s.r.Closing() {
		return
	}
	hit := false
	switch q := req.(type) {
	case *task.CreateRequest:
		hit = strings.HasPrefix(q.Path, simRoot+"/tasks/")
	case *task.MultiRequest:
		hit = true
	case *task.GetChildrenRequest:
		hit = q.Watch && q.Path == simRoot+"/workers"
	}
	if hit && s.r.Rand.Float64() < 0.05 {
		s.targeted++
		s.r.Server.Drop(conn, s.r.Rand.IntN(2) == 0)
	}
}

// instant checks the server's tree: no task is in /tasks and an
// assignment directory, or in two assignment directories, at once; and
// every task a submitter was told about is in exactly one of /tasks,
// /assign/* and /status.
func (s *mwSim) instant() {
	if s.r == nil || s.r.Failed() {
		return
	}
	if s.fence.err != nil {
		s.r.Errorf("%v", s.fence.err)
		return
	}
	z := s.r.Server.Zxid()
	if z == s.lastZxid {
		return // nothing changed since the last check
	}
	if z > s.lastZxid+1 {
		s.skipped += z - s.lastZxid - 1
	}
	s.lastZxid = z
	s.checks++
	if s.where == nil {
		s.where = map[string]string{}
	}
	clear(s.where)
	// Only the task directories are read (the server keeps each node's
	// children in order between changes), and the statuses of the
	// submissions not seen done yet (a status, once seen, is judged from
	// the task directories alone while no status was deleted).
	if st, _ := s.r.NodeStat(simRoot + "/status"); [2]int64{st.Czxid, int64(st.Cversion - st.NumChildren)} != s.doneStamp {
		s.doneStamp = [2]int64{st.Czxid, int64(st.Cversion - st.NumChildren)}
		for name, d := range s.doneSeen {
			s.undone[d.id] = undoneTask{name, d.status}
		}
		clear(s.doneSeen)
	}
	place := func(name, place string) bool {
		if other, dup := s.where[name]; dup {
			s.r.Errorf("zxid %d: task %s is in %s and %s at once", z, name, other, place)
			return false
		}
		s.where[name] = place
		return true
	}
	for _, w := range s.r.Children(simRoot + "/assign") {
		names := s.r.Children(simRoot + "/assign/" + w)
		if len(names) == 0 {
			continue
		}
		at, ok := s.assignAt[w] // once per directory, not per task or check
		if !ok {
			if s.assignAt == nil {
				s.assignAt = map[string]string{}
			}
			at = "assign/" + w
			s.assignAt[w] = at
		}
		for _, name := range names {
			if !place(name, at) {
				return
			}
		}
	}
	for _, name := range s.r.Children(simRoot + "/tasks") {
		if !place(name, "tasks") {
			return
		}
	}
	// Every submission's task is in exactly one of /tasks, /assign/*,
	// /status: those seen done in none of the first two, the others
	// looked up.
	for name, at := range s.where {
		if d, ok := s.doneSeen[name]; ok {
			s.r.Errorf("zxid %d: task %s (submission %s) has a status and is still in %s", z, name, d.id, at)
			return
		}
	}
	for id, u := range s.undone {
		name := u.name
		at, queued := s.where[name]
		_, isDone := s.r.NodeStat(u.status)
		if !queued && !isDone {
			s.r.Errorf("zxid %d: task %s (submission %s) lost: in none of /tasks, /assign/*, /status", z, name, id)
			return
		}
		if queued && isDone {
			s.r.Errorf("zxid %d: task %s (submission %s) has a status and is still in %s", z, name, id, at)
			return
		}
		if isDone {
			delete(s.undone, id)
			s.doneSeen[name] = seenTask{id, u.status}
		}
	}
}

// named records that submission id's task is name, for instant to judge,
// and judges the name: task-<submission id>-<sequence> (PROTOCOL.md's
// task names), its submission id starting with prefix (the id given
// Submit, or the blocking Client's id and "_": NewClient); and no other
// submission's.
func (s *mwSim) named(id, prefix, name string) {
	if !strings.HasPrefix(name, prefix) || !taskSeq(name) {
		s.r.Errorf("submission %s: its task is named %s, not %s...-<sequence number>", id, name, prefix)
	}
	for other, n := range s.names {
		if n == name && other != id {
			s.r.Errorf("submissions %s and %s both told their task is %s", other, id, name)
		}
	}
	s.names[id] = name
	s.undone[id] = undoneTask{name, simRoot + "/status/" + name}
}

// undoneTask is a submission's task not seen done yet: its name, and its
// status node's path, which instant looks up at every check.
type undoneTask struct{ name, status string }

// seenTask is a submission whose status instant has seen: its id, and its
// status node's path, kept for when it is looked up again.
type seenTask struct{ id, status string }

func (s *mwSim) workload(r *sim.Trial) {
	s.crashes(r)
	for i := range simMasters {
		if s.blocking {
			s.serveMaster(i)
		} else {
			s.master(i)
		}
	}
	for i := range simWorkers {
		if s.blocking {
			s.serveWorker(simMasters + i)
		} else {
			s.worker(simMasters+i, 0)
		}
	}
	for i := range simSubmitters {
		s.submitter(simMasters+simWorkers+i, 0)
	}
}

// crashes expires, every 1 to 3 simulated seconds while the faults are
// on, the session of a worker (a crashed worker machine, replaced by a
// new worker), and once, at a random time in the first half of the run,
// the session of the acting primary (a failover), in every seed whatever
// its fault plan.
func (s *mwSim) crashes(r *sim.Trial) {
	var tick func()
	tick = func() {
		if !r.FaultsOn() || r.Closing() {
			return
		}
		s.killed++
		r.Server.Expire(r.Conns[simMasters+r.Rand.IntN(simWorkers)])
		r.Clock.AfterFunc(time.Second+time.Duration(r.Rand.Int64N(int64(2*time.Second))), tick)
	}
	r.Clock.AfterFunc(time.Second+time.Duration(r.Rand.Int64N(int64(2*time.Second))), tick)
	r.Clock.AfterFunc(time.Duration(r.Rand.Int64N(int64(simDuration/2))), func() {
		for i, m := range s.masters {
			if m != nil && m.Primary() && !r.Closing() {
				s.killed++
				r.Server.Expire(r.Conns[i])
				return
			}
		}
	})
	// In half the seeds, the acting primary is stopped once (its Run
	// canceled, as a Serve whose context ended) while its session lives,
	// and started again 0-3 s later: it must give the mastership up at
	// once, or no one is primary again.
	if r.Rand.IntN(2) == 0 {
		r.Clock.AfterFunc(time.Duration(r.Rand.Int64N(int64(simDuration/2))), func() {
			for i, m := range s.masters {
				if m != nil && m.Primary() && !r.Closing() && s.runs[i] != nil && !s.stopping[i] {
					s.stopping[i] = true
					s.runs[i].Cancel()
					return
				}
			}
		})
	}
}

// restart starts client i's part again after its process crashed, with
// the same identity: the same master id, the same worker id (while the
// dead process's registration lives on until its session expires), or
// the same submission (submitted again, since the dead process's create
// may have been applied, or waited for if its name was known).
func (s *mwSim) restart(i int) {
	// The dead process's handlers never end, nor its runs: what its
	// Master or Worker counted is all it counts.
	for id := range s.busy {
		if strings.HasPrefix(id, fmt.Sprintf("w%d-", i)) {
			delete(s.busy, id)
		}
	}
	if i < simMasters {
		s.masterStats(s.masters[i])
	} else {
		s.workerDone(s.workers[i])
	}
	switch {
	case i < simMasters && s.blocking:
		s.masters[i] = nil
		s.serveMaster(i)
	case i < simMasters:
		s.masters[i], s.stopping[i] = nil, false
		s.master(i)
	case i < simMasters+simWorkers && s.blocking:
		s.serveWorker(i)
	case i < simMasters+simWorkers:
		s.worker(i, s.workerN[i])
	case s.blocking:
		// The dead process's submission under way is abandoned; the
		// new one submits new ones, through a Client of the same id.
		s.waiting[i-simMasters-simWorkers] = 0
		s.blockingSubmitter(i)
	default:
		si := i - simMasters - simWorkers
		if s.waiting[si] == 0 {
			s.submitter(i, s.subJ[si]) // (stopping: it submits nothing)
			return
		}
		j := s.subJ[si]
		id := fmt.Sprintf("c%dn%d", i, j)
		if name, ok := s.names[id]; ok {
			s.wait(i, si, j, id, name)
			return
		}
		s.submit(i, si, j, id, true)
	}
}

// later runs f for client i's process after a wait drawn in [0,
// 300ms), unless the world is closing by then or the process crashed
// meanwhile (its restart took its part over).
func (s *mwSim) later(i int, f func()) {
	inc := s.r.Incarnation(i)
	s.r.Clock.AfterFunc(time.Duration(s.r.Rand.Int64N(int64(300*time.Millisecond))), func() {
		if !s.r.Closing() && s.r.Incarnation(i) == inc {
			f()
		}
	})
}

// master runs a master on client i, again after each session expiry.
func (s *mwSim) master(i int) {
	m, err := s.sys.Master(fmt.Sprintf("m%d", i))
	if err != nil {
		s.r.Errorf("master: %v", err)
		return
	}
	var run func()
	run = func() {
		s.masters[i] = m
		s.runs[i] = executor.Submit(s.r.Execs[i], m.Run(), func(_ task.Unit, err error) {
			s.masterStats(m)
			switch {
			case s.r.Closing():
			case s.stopping[i] && errors.Is(err, task.ErrCanceled):
				s.stopping[i] = false
				s.stops++
				s.r.Logf("client %d: master stopped (its Run canceled)", i)
				s.r.Clock.AfterFunc(time.Duration(s.r.Rand.Int64N(int64(3*time.Second))), func() {
					if !s.r.Closing() && s.masters[i] == m {
						m, _ = s.sys.Master(fmt.Sprintf("m%d", i))
						run()
					}
				})
			case errors.Is(err, task.ErrSessionExpired):
				s.failovers++
				m, _ = s.sys.Master(fmt.Sprintf("m%d", i))
				run()
			case errors.Is(err, task.ErrNoAuth):
				// An operator's ACL refused it: the process runs a new
				// master a little later.
				s.refused++
				s.later(i, func() {
					if s.masters[i] == m {
						m, _ = s.sys.Master(fmt.Sprintf("m%d", i))
						run()
					}
				})
			default:
				s.r.Errorf("client %d: master ended: %v", i, err)
			}
		})
	}
	run()
}

// worker runs worker number n on client i; when its session ends it is
// replaced by worker n+1 (a new id).
func (s *mwSim) worker(i, n int) {
	s.workerN[i] = n
	id := fmt.Sprintf("w%d-%d", i, n)
	w, err := s.sys.Worker(id, s.handler(i, id))
	if err != nil {
		s.r.Errorf("worker: %v", err)
		return
	}
	s.workers[i] = w
	executor.Submit(s.r.Execs[i], w.Run(), func(_ task.Unit, err error) {
		s.workerDone(w)
		canceled, foreign := s.canceled[i], s.foreign[i]
		s.canceled[i], s.foreign[i] = false, false
		switch {
		case s.r.Closing():
		case errors.Is(err, task.ErrSessionExpired) && foreign:
			// Its handler stopped it with another session's expiry:
			// the worker gave its registration up (its session
			// lives on), so the primary moves the job back; the
			// process runs a new worker a little later.
			s.handlerStops++
			s.later(i, func() { s.worker(i, n+1) })
		case errors.Is(err, task.ErrCanceled) && canceled:
			// Its handler stopped it: the job stays assigned to the
			// id, and the process serves the id again a little later.
			s.handlerStops++
			s.later(i, func() { s.worker(i, n) })
		case errors.Is(err, task.ErrSessionExpired):
			s.crashed++
			s.worker(i, n+1)
		case errors.Is(err, task.ErrNoAuth):
			// An operator's ACL refused it: the process runs a new
			// worker a little later, under a new id.
			s.refused++
			s.later(i, func() { s.worker(i, n+1) })
		default:
			s.r.Errorf("client %d: worker %s ended: %v", i, id, err)
		}
	})
}

// handler is the handler of client i's worker id: it records each run
// and gives the outcome handlerFate draws. It judges that the worker runs
// its jobs one at a time (Worker.Run) and that a job's data is its
// submission's, in every run (Job.Data: what the client submitted; a
// task keeps its data through every move).
func (s *mwSim) handler(i int, id string) masterworker.Handler {
	return func(j masterworker.Job) task.Task[[]byte] {
		return func(sc *task.Scope, k task.Cont[[]byte]) {
			s.executed[j.Name]++
			if other, ok := s.busy[id]; ok {
				s.r.Errorf("client %d: worker %s runs job %s while its job %s runs: not one at a time", i, id, j.Name, other)
			}
			s.busy[id] = j.Name
			bar := s.r.OpenSpan(i, "task", strings.TrimPrefix(j.Name, "task-")) // on the seed's picture
			think := time.Duration(sc.Rand()%500) * time.Millisecond
			fate := handlerFate(sc.Rand(), s.r.Stopping())
			task.Run(sc, c.Sleep(think), func(_ task.Unit, err error) {
				s.r.CloseSpan(bar)
				delete(s.busy, id)
				if err != nil {
					k(nil, err)
					return
				}
				rs := s.ran[j.Name]
				if rs == nil {
					rs = &runs{id: string(j.Data)}
					s.ran[j.Name] = rs
				} else if rs.id != string(j.Data) {
					s.r.Errorf("client %d: worker %s ran job %s with data %q, where an earlier run had %q", i, id, j.Name, j.Data, rs.id)
				}
				rs.fates |= 1 << fate
				switch fate {
				case fateFail:
					k(nil, errors.New("fail:"+string(j.Data)))
				case fateBig:
					k(bigResult, nil)
				case fateCancel:
					s.canceled[i] = true
					k(nil, task.ErrCanceled)
				case fateForeign:
					s.foreign[i] = true
					k(nil, fmt.Errorf("the handler's own store: %w", task.ErrSessionExpired))
				default:
					k(j.Data, nil)
				}
			})
		}
	}
}

// submitter submits tasks one after another on client i, each with a
// unique id (which is also its data), and waits for each status.
func (s *mwSim) submitter(i, j int) {
	if s.r.Stopping() || s.r.Closing() {
		return
	}
	if s.blocking {
		s.blockingSubmitter(i)
		return
	}
	id := fmt.Sprintf("c%dn%d", i, j)
	si := i - simMasters - simWorkers
	s.subJ[si] = j
	s.waiting[si]++
	s.stats.submitted++
	s.submit(i, si, j, id, false)
}

// submit submits id on client i (again: with Resubmit, the create of an
// earlier attempt may have been applied) and waits for its status.
func (s *mwSim) submit(i, si, j int, id string, again bool) {
	t := s.sys.Submit(id, []byte(id))
	if again {
		s.stats.reruns++
		t = s.sys.Resubmit(id, []byte(id))
	}
	executor.Submit(s.r.Execs[i], t, func(name string, err error) {
		switch {
		case s.r.Closing():
			return
		case errors.Is(err, task.ErrSessionExpired):
			s.submit(i, si, j, id, true) // the create may have been applied
			return
		case errors.Is(err, task.ErrNoAuth):
			s.refused++
			s.later(i, func() { s.submit(i, si, j, id, true) })
			return
		case err != nil:
			s.r.Errorf("client %d: submit %s: %v", i, id, err)
			return
		}
		s.named(id, "task-"+id+"-", name)
		s.wait(i, si, j, id, name)
	})
}

func (s *mwSim) wait(i, si, j int, id, name string) {
	executor.Submit(s.r.Execs[i], s.sys.Wait(name), func(res masterworker.Result, err error) {
		switch {
		case s.r.Closing():
			return
		case errors.Is(err, task.ErrSessionExpired):
			s.wait(i, si, j, id, name)
			return
		case errors.Is(err, task.ErrNoAuth):
			s.refused++
			s.later(i, func() { s.wait(i, si, j, id, name) })
			return
		case err != nil:
			s.r.Errorf("client %d: wait %s: %v", i, name, err)
			return
		case !s.onServer(name, res):
			s.r.Errorf("client %d: Wait of %s (submission %s) returned %+v, not the status on the server", i, name, id, res)
			return
		case !s.statusOK(name, id, res):
			s.r.Errorf("client %d: status of %s (submission %s): %+v, not what a run of its handler gave", i, name, id, res)
			return
		}
		s.results[id]++
		s.waiting[si]--
		s.r.Progress(i)
		s.submitter(i, j+1)
	})
}

// blockingSubmitter runs submitter client i's process on the blocking
// Client: one goroutine that submits one submission after the other
// (data "c<i>n<j>", j counted on across the process's incarnations) and
// waits for each one's status, which must be its own.
func (s *mwSim) blockingSubmitter(i int) {
	r := s.r
	si := i - simMasters - simWorkers
	cl, err := s.sys.NewClient(r.Execs[i], fmt.Sprintf("client-%d", i))
	if err != nil {
		r.Errorf("client %d: %v", i, err)
		return
	}
	// call draws where a call's context ends: nowhere (two calls in
	// three), or after a few steps or at an instant drawn (the world may
	// end it in an outage it cuts, or inside a job: the scenario's
	// OutageEnds and InJobEnds).
	call := func(a *sim.Actor) (context.Context, context.CancelFunc) {
		rnd := a.Rand()
		switch rnd.IntN(6) {
		case 0:
			return a.CancelAfterSteps(a.Context(), rnd.IntN(16))
		case 1:
			return a.WithTimeout(a.Context(), time.Duration(rnd.Int64N(int64(time.Second))))
		}
		return a.WithCancel(a.Context())
	}
	// refused judges a call's error; ended is its context's error when
	// the call returned (read before the call's cancel).
	refused := func(a *sim.Actor, what string, ended, err error) bool {
		switch {
		case r.Closing() || a.Context().Err() != nil:
		case errors.Is(err, task.ErrCanceled), errors.Is(err, task.ErrDeadlineExceeded):
			// Its own context ended: a Submit may or may not have
			// made its task (an orphan: one status if made); a Wait is
			// called again. Only its context's end, matching it (the
			// package doc: Submit returns ctx's error, Wait waits until
			// ctx ends).
			if ended == nil || !errors.Is(err, ended) {
				r.Errorf("client %d: %s returned %v, its context %s", i, what, err, ctxState(ended))
			}
		case errors.Is(err, task.ErrNoAuth):
			s.refused++
			_ = a.Sleep(a.Context(), time.Duration(a.Rand().Int64N(int64(300*time.Millisecond))))
		default:
			r.Errorf("client %d: %s: %v", i, what, err)
		}
		return true
	}
	r.Go(i, func(a *sim.Actor) {
		// Counted once it runs: an actor its process's crash kills
		// before it starts never runs.
		s.subLive++
		defer func() { s.subLive-- }()
		for !r.Stopping() && a.Context().Err() == nil {
			j := s.subJ[si]
			s.subJ[si] = j + 1
			id := fmt.Sprintf("c%dn%d", i, j)
			s.waiting[si]++
			s.stats.submitted++
			s.orphans[id] = true
			ctx, cancel := call(a)
			name, err := cl.Submit(ctx, []byte(id))
			ended := ctx.Err()
			cancel()
			if err != nil {
				s.waiting[si]--
				refused(a, "submit "+id, ended, err)
				continue
			}
			delete(s.orphans, id)
			s.named(id, fmt.Sprintf("task-client-%d_", i), name)
			for a.Context().Err() == nil {
				ctx, cancel := call(a)
				res, err := cl.Wait(ctx, name)
				ended := ctx.Err()
				cancel()
				if err != nil {
					refused(a, "wait "+name, ended, err)
					continue
				}
				if !s.onServer(name, res) {
					r.Errorf("client %d: Wait of %s (submission %s) returned %+v, not the status on the server", i, name, id, res)
					return
				}
				if !s.statusOK(name, id, res) {
					r.Errorf("client %d: Submit of %s returned %s, whose status is %+v: not its own, or not what a run of its handler gave", i, id, name, res)
					return
				}
				s.results[id]++
				s.waiting[si]--
				r.Progress(i)
				break
			}
		}
	})
}

// final judges the end state: every submission has exactly one status
// (counted by the data the workers wrote, so a duplicate task shows even
// if its name does not carry the id), nothing is left in /tasks or in any
// assignment directory, and no status belongs to an unknown submission;
// every status, waited for or not (an orphan's), is in the recipe's
// format and what a run of its task's handler gave; every move was
// fenced (fenceJudge); and the masters' Stats and the workers' Completed
// count no more than the server applied.
func (s *mwSim) final() error {
	s.stats.seeds++
	s.stats.failovers += s.failovers
	s.stats.stops += s.stops
	s.stats.refused += s.refused
	s.stats.serves += s.serves
	s.stats.serveEnds += s.serveEnds
	s.stats.crashes += s.crashed
	s.stats.killed += s.killed
	s.stats.handlerStops += s.handlerStops
	for _, rs := range s.ran {
		for f := range numFates {
			if rs.fates&(1<<f) != 0 {
				s.stats.fates[f]++
			}
		}
	}
	for _, n := range s.executed {
		if n > 1 {
			s.stats.rerun++ // at-least-once execution: the status was still written once
		}
	}
	s.stats.targeted += s.targeted
	s.stats.checks += s.checks
	s.stats.zxids += s.lastZxid
	s.stats.skipped += s.skipped
	if left := s.r.Children(simRoot + "/tasks"); len(left) > 0 {
		return fmt.Errorf("tasks left unassigned: %v", left)
	}
	for _, w := range s.r.Children(simRoot + "/assign") {
		if left := s.r.Children(simRoot + "/assign/" + w); len(left) > 0 {
			return fmt.Errorf("tasks left assigned to %s: %v", w, left)
		}
	}
	byData := map[string][]string{}
	statuses := s.r.Children(simRoot + "/status")
	for _, name := range statuses {
		// Straight from the server's tree: a read through a client's
		// session could meet the end of a session a late fault cut.
		data, _, ok := s.r.NodeData(simRoot + "/status/" + name)
		if !ok || len(data) == 0 {
			return fmt.Errorf("read status %s: gone or empty", name)
		}
		if rs := s.ran[name]; rs == nil || (data[0] != 'o' && data[0] != 'e') ||
			!s.statusOK(name, rs.id, masterworker.Result{Data: data[1:], Failed: data[0] == 'e'}) {
			return fmt.Errorf("status %s holds %q: not what a run of its task's handler gave", name, data)
		}
		id := s.statusOf(name, data)
		byData[id] = append(byData[id], name)
	}
	for id := range s.names {
		if n := len(byData[id]); n != 1 {
			return fmt.Errorf("submission %s has %d statuses: %v", id, n, byData[id])
		}
	}
	for id, names := range byData {
		if _, ok := s.names[id]; !ok && !s.orphans[id] {
			return fmt.Errorf("statuses %v for submission %s, which no submitter was told about", names, id)
		}
		if len(names) != 1 {
			return fmt.Errorf("submission %s has %d statuses: %v", id, len(names), names)
		}
	}
	for id, n := range s.results {
		if n != 1 {
			return fmt.Errorf("submission %s answered %d times", id, n)
		}
	}
	if s.fence.err != nil {
		return s.fence.err
	}
	for _, m := range s.masters {
		s.masterStats(m)
	}
	for _, w := range s.workers {
		s.workerDone(w)
	}
	if s.statAssigned > s.fence.assigned || s.statMoved > s.fence.movedBack {
		return fmt.Errorf("the masters' Stats count %d assignments and %d moves back; the server applied %d and %d", s.statAssigned, s.statMoved, s.fence.assigned, s.fence.movedBack)
	}
	if s.completed > int64(len(statuses)) {
		return fmt.Errorf("the workers' Completed count %d statuses written; the server holds %d", s.completed, len(statuses))
	}
	return nil
}

// masterStats adds m's Stats up, once: when its runs have ended, its
// process crashed, or the seed ended.
func (s *mwSim) masterStats(m *masterworker.Master) {
	if m == nil || s.counted[m] {
		return
	}
	s.counted[m] = true
	terms, assigned, moved := m.Stats()
	s.stats.moves += moved
	s.stats.terms += terms
	s.statAssigned += assigned
	s.statMoved += moved
}

// workerDone adds w's Completed up, once, as masterStats does.
func (s *mwSim) workerDone(w *masterworker.Worker) {
	if w == nil || s.counted[w] {
		return
	}
	s.counted[w] = true
	s.completed += w.Completed()
}

// onServer reports whether res is the status of task name on the server:
// the one result every Wait of the task reads (the package doc: the
// status is written once, and the client reads that one result).
func (s *mwSim) onServer(name string, res masterworker.Result) bool {
	data, _, ok := s.r.NodeData(simRoot + "/status/" + name)
	tag := byte('o')
	if res.Failed {
		tag = 'e'
	}
	return ok && len(data) > 0 && data[0] == tag && string(data[1:]) == string(res.Data)
}

// taskSeq reports whether name ends in "-" and a sequence number as
// ZooKeeper appends it: ten digits, or a minus sign and ten digits once
// the counter has wrapped (PROTOCOL.md, the tasks directory's counter).
func taskSeq(name string) bool {
	k := strings.LastIndexByte(name, '-')
	if k < 0 {
		return false
	}
	seq := name[k+1:]
	if k > 0 && name[k-1] == '-' {
		seq = name[k:] // a negative number: "...--0000000005"
	}
	n, err := strconv.ParseInt(seq, 10, 32)
	return err == nil && seq == fmt.Sprintf("%010d", n)
}

// ctxState describes a call's context as it was when the call returned,
// for a message.
func ctxState(ended error) string {
	if ended == nil {
		return "live"
	}
	return "ended with " + ended.Error()
}

// Safety and liveness over many seeds, each with a fault plan drawn from
// every class but Wipe (connection drops applied and not, short and long
// partitions, expiries, delays, server restarts, clock jumps, crashes,
// pauses, the operator, and the counter classes on /tasks): at every
// instant the tree changed, no task is in two places and no task a
// submitter was told about is missing; every submission gets exactly one
// status; after the faults stop, submitters make progress and every
// submission is answered. A failing seed prints its replay command.
func TestSimSafety(t *testing.T) {
	// 50 seeds keep the race-detector run short; -sim.seeds=N runs more.
	seeds := 50
	if testing.Short() {
		seeds = 15
	}
	var tot simTotals
	sim.Check(t, newMWScenario(&tot), seeds)
	t.Logf("%d seeds: %d submissions (%d resubmitted after expiry), %d terms as primary, %d sessions expired and %d connections dropped under a request by the workload, %d master runs ended by expiry, %d primaries stopped, %d workers replaced, %d tasks moved back from dead workers, %d tasks whose handler ran more than once, %d runs, submits and waits an ACL refused; tree checked at %d of %d zxids (%d changes were followed by another before any client acted)",
		tot.seeds, tot.submitted, tot.reruns, tot.terms, tot.killed, tot.targeted, tot.failovers, tot.stops, tot.crashes, tot.moves, tot.rerun, tot.refused, tot.checks, tot.zxids, tot.skipped)
	if tot.failovers == 0 || tot.crashes == 0 || tot.moves == 0 || tot.stops == 0 {
		t.Fatal("the drawn faults never made a master fail over, a worker's tasks move or a primary stop: the test checks less than it says")
	}
	tot.checkHandlers(t)
}

// checkHandlers logs the handlers' outcomes and fails if one never
// happened.
func (tot *simTotals) checkHandlers(t *testing.T) {
	t.Helper()
	t.Logf("handlers: tasks that succeeded %d, failed %d, gave too much %d, stopped their worker %d, failed with another session's expiry %d (%d worker runs stopped)",
		tot.fates[fateOK], tot.fates[fateFail], tot.fates[fateBig], tot.fates[fateCancel], tot.fates[fateForeign], tot.handlerStops)
	if tot.fates[fateFail] == 0 || tot.fates[fateBig] == 0 || tot.fates[fateCancel] == 0 || tot.fates[fateForeign] == 0 || tot.handlerStops == 0 {
		t.Fatal("a handler outcome never happened: the test checks less than it says")
	}
}

// The large run of make sim: SIM_SEEDS seeds (skipped when unset).
// The seeds that once failed (Scenario.Regressions), on every run.
func TestSimRegressions(t *testing.T) {
	var tot simTotals
	sim.Regressions(t, newMWScenario(&tot))
	sim.Regressions(t, newBlockingMWScenario(&tot))
}

func TestSimExplore(t *testing.T) {
	var tot simTotals
	sim.Explore(t, newMWScenario(&tot), newBlockingMWScenario(&tot))
}

// The blocking submitters: a Client of one id in every incarnation of a
// submitter process, each Wait answered with its own submission.
func TestBlockingSimSafety(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 10
	}
	var tot simTotals
	sim.Check(t, newBlockingMWScenario(&tot), seeds)
	t.Logf("%d seeds: %d submissions, %d connections dropped under a request, %d runs, submits and waits an ACL refused, %d of %d Serves of masters and workers ended by their context, %d terms as primary, %d tasks moved back",
		tot.seeds, tot.submitted, tot.targeted, tot.refused, tot.serveEnds, tot.serves, tot.terms, tot.moves)
	if tot.serveEnds == 0 || tot.terms == 0 || tot.moves == 0 {
		t.Fatal("no Serve ended by its context, no term or no task moved: the test checks less than it says")
	}
	tot.checkHandlers(t)
}

// A sample of seeds runs twice with the same history (make sim counts the
// pairs).
func TestSimDeterminism(t *testing.T) {
	var tot simTotals
	sim.Determinism(t, newMWScenario(&tot), sim.Sample(3, 500))
	sim.Determinism(t, newBlockingMWScenario(&tot), sim.Sample(3, 500))
}

// What a run of the simulation's handler does: succeed with the job's
// data (the submission id), fail with "fail:<id>" (a failed status),
// succeed with a value over the server's limit (a failed status that
// says so), fail with task.ErrCanceled (the worker stops; the job
// stays assigned), or fail with task.ErrSessionExpired of another
// session than the worker's (something else the handler uses: the worker
// stops and gives its registration up while its session lives, so the
// job moves back). Until the workload stops, one run in eight fails, one
// in thirty-two gives too much, one in thirty-two stops its worker and
// one in thirty-two fails with another session's expiry; after, a run
// only succeeds or fails, so every task gets its status.
const (
	fateOK = iota
	fateFail
	fateBig
	fateCancel
	fateForeign
	numFates
)

func handlerFate(r uint64, stopping bool) int {
	switch d := r % 32; {
	case d < 4:
		return fateFail
	case d == 4 && !stopping:
		return fateBig
	case d == 5 && !stopping:
		return fateCancel
	case d == 6 && !stopping:
		return fateForeign
	}
	return fateOK
}

// runs is what the handler runs of one task gave.
type runs struct {
	id    string // the submission: the job's data
	fates uint8  // 1<<fate for each fate a run gave
}

// statusOK reports whether res, the status of task name (submission
// id), is what a run of its handler gave: only one status is written,
// the first run's to write it.
func (s *mwSim) statusOK(name, id string, res masterworker.Result) bool {
	rs := s.ran[name]
	if rs == nil || rs.id != id {
		return false
	}
	switch {
	case !res.Failed:
		return rs.fates&(1<<fateOK) != 0 && string(res.Data) == id
	case string(res.Data) == "fail:"+id:
		return rs.fates&(1<<fateFail) != 0
	default:
		return rs.fates&(1<<fateBig) != 0 && string(res.Data) == bigMessage(name)
	}
}

// bigResult is a handler's value over the server's limit (fateBig),
// shared by every seed: the worker only reads it.
var bigResult = make([]byte, task.MaxDataSize)

// bigMessage is the failed status of task name whose handler gave a
// value over the server's limit.
func bigMessage(name string) string {
	return fmt.Sprintf("masterworker: task %s: its result (%d bytes) is over the server's limit", name, task.MaxDataSize)
}

// statusOf returns the submission whose status /status/name holds data
// (encoded: a tag byte, then the value), as final counts them; a status
// no handler run could have written is named for what it holds.
func (s *mwSim) statusOf(name string, data []byte) string {
	v := string(data[1:])
	rs := s.ran[name]
	switch {
	case rs == nil:
		return v
	case v == "fail:"+rs.id || v == bigMessage(name):
		return rs.id
	}
	return v
}
