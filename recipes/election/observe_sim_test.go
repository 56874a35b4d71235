package election_test

import (
	"errors"
	"fmt"
	"math"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// observeClient runs a Master's Observe in the master scenario: the twin
// of client 0 (addTwin), which campaigns too but is not judged on
// progress (an observer's reads on its session make its campaigns the
// last to answer a master's end), under the faults of its own session.
const observeClient = exploreClients

// masterWatch judges Observe in the master scenario. The master node's
// versions come from the server's journal (fakezk.Config.Journal); every
// observation must be the node as it was at one zxid (who holds it, by
// czxid and owner, or nobody), never at a zxid before the previous
// observation's ("observations never go back in time"), and once the
// faults stop and the node is gone, the observer says nobody leads ("the
// last one never is [skipped]").
type masterWatch struct {
	w        *sim.World
	path     string          // the master node's server path
	versions []masterVersion // in zxid order
	at       int64           // the earliest zxid the last observation can be
	last     *election.Observation
	on       bool // the observer runs this seed
	seen     int  // observations judged, over seeds
}

type masterVersion struct {
	from    int64
	present bool
	czxid   int64
	owner   int64
}

func (m *masterWatch) reset(w *sim.World) {
	*m = masterWatch{w: w, path: w.ServerPath("/svc/master"), at: math.MinInt64, seen: m.seen}
}

// journal is the server's Config.Journal (server lock held).
func (m *masterWatch) journal(c fakezk.Commit) {
	if m.w == nil {
		return
	}
	for _, n := range c.Nodes {
		if n.Path == m.path {
			m.versions = append(m.versions, masterVersion{from: c.Zxid, present: true, czxid: n.Stat.Czxid, owner: n.Stat.EphemeralOwner})
		}
	}
	for _, d := range c.Deleted {
		if d == m.path {
			m.versions = append(m.versions, masterVersion{from: c.Zxid})
		}
	}
}

// see judges observation ob.
func (m *masterWatch) see(ob election.Observation) error {
	m.seen++
	m.last = &ob
	match := func(v masterVersion) bool {
		if !ob.Leading {
			return !v.present
		}
		return v.present && v.czxid == ob.Token && v.owner == ob.Session
	}
	// Before the first version the node did not exist.
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
	return fmt.Errorf("observer: %+v is the master node at no zxid since %d (its versions %+v)", ob, m.at, m.versions)
}

// start runs client observeClient's observer (again after a crash of its
// process: a new process may be served older states, so the judge's
// earliest zxid starts afresh).
func (m *masterWatch) start(r *sim.Trial, cand election.Candidate) {
	m.at, m.last, m.on = math.MinInt64, nil, true
	ex := r.Execs[observeClient]
	executor.Submit(ex, cand.Observe(func(ob election.Observation) {
		if ex != r.Execs[observeClient] {
			return // a dead process's observer
		}
		if err := m.see(ob); err != nil {
			r.Errorf("client %d: %v", observeClient, err)
		}
	}), func(_ *election.Observer, err error) {
		if err != nil && !r.Closing() && ex == r.Execs[observeClient] {
			if errors.Is(err, task.ErrSessionExpired) {
				m.start(r, cand)
				return
			}
			r.Errorf("client %d: observe: %v", observeClient, err)
		}
	})
}

// settled reports whether the observer's last observation is that nobody
// leads (the scenario quiesces with the master node gone).
func (m *masterWatch) settled() bool { return m.last != nil && !m.last.Leading }
