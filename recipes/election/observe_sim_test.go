package election_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// observeClient runs the candidate's Observe in the explore scenarios: the twin
// of client 0 (addTwin), which campaigns too but is not judged on
// progress (an observer's reads on its session make its campaigns the
// last to answer a master's end), under the faults of its own session.
const observeClient = exploreClients

// leaderWatch judges Observe in the explore scenarios. Who leads comes
// from the server's journal (fakezk.Config.Journal): for a Master, the
// master node; for an Election, the lowest candidate node of the
// directory in the recipe's order of names (election.Lowest: the order
// every campaign uses, sequence numbers past a counter's end included).
// Every observation must be who led at one zxid (the node by czxid and
// owner, or nobody), never at a zxid before the previous observation's
// ("observations never go back in time"), and once the faults stop and
// nobody leads, the observer says so ("the last one never is
// [skipped]").
type leaderWatch struct {
	w            *sim.World
	path         string          // the master node's server path, or the election directory's
	election     bool            // path is an election's directory
	kids         map[string]kid  // the directory's candidate nodes by name (election)
	versions     []leaderVersion // in zxid order
	at           int64           // the earliest zxid the last observation can be
	last         *election.Observation
	on           bool  // the observer runs this seed
	sess         int64 // the session of the last observation (the blocking face)
	seen         int   // observations judged, over seeds
	seenBlocking int   // of them, read from the blocking face's channel
	refused      int   // observers an operator's ACL refused or ended, over seeds
	excused      int   // observations not judged: an ACL changed (see)
}

type leaderVersion struct {
	from    int64
	present bool
	czxid   int64
	owner   int64
}

type kid struct{ czxid, owner int64 }

func (m *leaderWatch) reset(w *sim.World, path string, isElection bool) {
	*m = leaderWatch{w: w, path: w.ServerPath(path), election: isElection, kids: map[string]kid{}, at: math.MinInt64,
		seen: m.seen, seenBlocking: m.seenBlocking}
}

// journal is the server's Config.Journal (server lock held).
func (m *leaderWatch) journal(c fakezk.Commit) {
	if m.w == nil {
		return
	}
	if m.election {
		m.journalDir(c)
		return
	}
	for _, n := range c.Nodes {
		if n.Path == m.path {
			m.versions = append(m.versions, leaderVersion{from: c.Zxid, present: true, czxid: n.Stat.Czxid, owner: n.Stat.EphemeralOwner})
		}
	}
	for _, d := range c.Deleted {
		if d == m.path {
			m.versions = append(m.versions, leaderVersion{from: c.Zxid})
		}
	}
}

// journalDir follows an election's directory: a new version whenever a
// commit changes its lowest candidate.
func (m *leaderWatch) journalDir(c fakezk.Commit) {
	name := func(p string) (string, bool) {
		rest, ok := strings.CutPrefix(p, m.path+"/")
		return rest, ok && rest != "" && !strings.Contains(rest, "/")
	}
	changed := false
	for _, n := range c.Nodes {
		if k, ok := name(n.Path); ok {
			m.kids[k] = kid{n.Stat.Czxid, n.Stat.EphemeralOwner}
			changed = true
		}
	}
	for _, d := range c.Deleted {
		if k, ok := name(d); ok {
			delete(m.kids, k)
			changed = true
		}
	}
	if !changed {
		return
	}
	v := leaderVersion{from: c.Zxid}
	if low, ok := election.Lowest(slices.Collect(maps.Keys(m.kids))); ok {
		k := m.kids[low]
		v.present, v.czxid, v.owner = true, k.czxid, k.owner
	}
	if n := len(m.versions); n > 0 {
		if l := m.versions[n-1]; l.present == v.present && l.czxid == v.czxid && l.owner == v.owner {
			return
		}
	}
	m.versions = append(m.versions, v)
}

// see judges observation ob.
func (m *leaderWatch) see(ob election.Observation) error {
	m.seen++
	m.last = &ob
	if m.w.ACLHidden(-1) {
		// An operator's ACL is changed, or came back less than the
		// watches' re-read period of the clients' running ago (the
		// observer's client is not known here: no suspension counted,
		// World.ACLHidden): a change to a candidate the
		// observer may not READ is withheld from it (recipes/cache,
		// "Nodes the session may not read"), so it may report a state
		// that never was. Not judged (the next one after is).
		m.excused++
		return nil
	}
	match := func(v leaderVersion) bool {
		if !ob.Leading {
			return !v.present
		}
		return v.present && v.czxid == ob.Token && v.owner == ob.Session
	}
	// Before the first version nobody led.
	if !ob.Leading && (len(m.versions) == 0 || m.at < m.versions[0].from) {
		return nil
	}
	for i, v := range m.versions {
		end := int64(math.MaxInt64)
		if i+1 < len(m.versions) {
			end = m.versions[i+1].from
		}
		if end > m.at && match(v) {
			m.at = max(m.at, v.from)
			return nil
		}
	}
	return fmt.Errorf("observer: %+v led at no zxid since %d (the leaders %+v)", ob, m.at, m.versions)
}

// start runs client observeClient's observer (again after a crash of its
// process: a new process may be served older states, so the judge's
// earliest zxid starts afresh).
func (m *leaderWatch) start(r *sim.Trial, cand election.Candidate) {
	m.at, m.last, m.on = math.MinInt64, nil, true
	ex := r.Execs[observeClient]
	executor.Submit(ex, cand.Observe(func(ob election.Observation) {
		if ex != r.Execs[observeClient] {
			return // a dead process's observer
		}
		if err := m.see(ob); err != nil {
			r.Errorf("client %d: %v", observeClient, err)
		}
	}), func(o *election.Observer, err error) {
		if r.Closing() || ex != r.Execs[observeClient] {
			return
		}
		again := func() { // a little later, on the same process
			r.Clock.AfterFunc(time.Duration(r.Rand.Int64N(int64(300*time.Millisecond))), func() {
				if !r.Closing() && ex == r.Execs[observeClient] {
					m.start(r, cand)
				}
			})
		}
		switch {
		case err == nil:
			// An observer an operator's ACL ends (its cache's read
			// refused) is started again (m.start: judged afresh, as a
			// new process's).
			r.Go(observeClient, func(a *sim.Actor) {
				if a.Wait(a.Context(), o.Done()) == nil && errors.Is(o.Err(), task.ErrNoAuth) {
					m.refused++
					again()
				}
			})
		case errors.Is(err, task.ErrSessionExpired):
			m.start(r, cand)
		case errors.Is(err, task.ErrNoAuth):
			m.refused++
			again()
		default:
			r.Errorf("client %d: observe: %v", observeClient, err)
		}
	})
}

// startBlocking runs client observeClient's observer through the
// blocking face, c.Observe, in an actor: each call's context ends after a
// number of steps or an instant drawn (never, one call in four), and the
// actor reads the channel (sim.Receive) until it closes, now and then
// sleeping between reads, so that observations pile up and the channel
// keeps only the latest; then it calls Observe again. Judged as the task
// face is: every observation read is who led at one zxid, never before
// the previous one's (on one session: a new session may be served an
// older state), and once nobody leads, the reader is told so. Once the
// workload stops, the reader keeps one call open and falls behind before
// every read, so the last changes (the candidates giving up) pile up in
// the channel: the last one must be what it holds.
func (m *leaderWatch) startBlocking(r *sim.Trial, c *election.Client) {
	m.at, m.last, m.on, m.sess = math.MinInt64, nil, true, 0
	conn := r.Conns[observeClient]
	r.Go(observeClient, func(a *sim.Actor) {
		rnd := a.Rand()
		for a.Context().Err() == nil {
			var ctx context.Context
			var cancel context.CancelFunc
			switch {
			case r.Stopping() || rnd.IntN(4) == 0:
				ctx, cancel = a.WithCancel(a.Context())
			case rnd.IntN(3) == 0:
				ctx, cancel = a.CancelAfterSteps(a.Context(), rnd.IntN(40))
			default:
				ctx, cancel = a.WithTimeout(a.Context(), time.Duration(rnd.Int64N(int64(3*time.Second))))
			}
			sess := conn.SessionID()
			ch, err := c.Observe(ctx)
			if err != nil {
				cancel()
				if errors.Is(err, task.ErrNoAuth) {
					m.refused++ // an operator's ACL: observe again a little later
				} else if ctx.Err() == nil && !r.Closing() {
					r.Errorf("client %d: blocking observe: %v", observeClient, err)
				}
				_ = a.Sleep(a.Context(), 100*time.Millisecond)
				continue
			}
			for {
				if r.Stopping() || rnd.IntN(4) == 0 {
					_ = a.Sleep(a.Context(), time.Duration(rnd.Int64N(int64(time.Second))))
				}
				ob, ok, _ := sim.Receive(a.Context(), a, ch) // the channel closes once ctx ends
				if !ok {
					break
				}
				if sess != m.sess {
					m.at, m.sess = math.MinInt64, sess
				}
				m.seenBlocking++
				if err := m.see(ob); err != nil {
					r.Errorf("client %d (blocking face): %v", observeClient, err)
				}
			}
			cancel()
		}
	})
}

// settled reports whether the observer's last observation is that nobody
// leads (the scenario quiesces with the master node, or every candidate
// node, gone).
func (m *leaderWatch) settled() bool { return m.last != nil && !m.last.Leading }
