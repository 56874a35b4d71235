package election_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// New and NewMaster refuse the directory "" and "/" (task.ErrInvalidPath).
// A zero Election or Master (not made by them: directory or path "") was
// not refused: a zero Election's Campaign created its candidate node at
// the root of the tree ("/_c_<id>-latch-<seq>") before its sync of ""
// failed. Every task of a zero Election or Master must fail with
// task.ErrInvalidPath without writing anything.
func TestZeroElectionAndMasterRefused(t *testing.T) {
	w, _ := newWorld(t, 1, 1, fakezk.Config{})
	cands := map[string]election.Candidate{"Election": &election.Election{}, "Master": &election.Master{}}
	for name, cand := range cands {
		before := w.Server.Zxid()
		_, err := mustRun(t, w, 0, cand.Campaign())
		if !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("Campaign of a zero %s = %v, want task.ErrInvalidPath", name, err)
		}
		if _, err := mustRun(t, w, 0, cand.Leader()); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("Leader of a zero %s = %v, want task.ErrInvalidPath", name, err)
		}
		if _, err := mustRun(t, w, 0, cand.Observe(func(election.Observation) {})); !errors.Is(err, task.ErrInvalidPath) {
			t.Errorf("Observe of a zero %s = %v, want task.ErrInvalidPath", name, err)
		}
		w.Settle(func() bool { return false })
		if after := w.Server.Zxid(); after != before {
			t.Errorf("the tasks of a zero %s wrote to the tree (zxid %d, then %d)", name, before, after)
		}
	}
}

// "The methods of Client are safe from any goroutine": NewClient refuses
// a nil executor with task.ErrInvalidArgument, but a nil or zero Client
// (not made by NewClient or NewMasterClient) panicked in Campaign,
// Leader, Lead and Observe (a method call on its nil Candidate). And a
// zero Leadership (not won by a campaign) panicked in its Resign task
// (closing its nil Done channel), crashing the executor. They are
// refused with task.ErrInvalidArgument now.
func TestZeroClientAndLeadershipRefused(t *testing.T) {
	ctx := context.Background()
	lead := func(context.Context, *election.Leadership) error { return nil }
	calls := []struct {
		name string
		f    func(c *election.Client) error
	}{
		{"Campaign", func(c *election.Client) error { _, err := c.Campaign(ctx); return err }},
		{"Leader", func(c *election.Client) error { _, err := c.Leader(ctx); return err }},
		{"Resign", func(c *election.Client) error { return c.Resign(ctx, nil) }},
		{"Fenced", func(c *election.Client) error { _, err := c.Fenced(ctx, nil); return err }},
		{"Lead", func(c *election.Client) error { return c.Lead(ctx, election.LeadOptions{}, lead) }},
		{"Observe", func(c *election.Client) error { _, err := c.Observe(ctx); return err }},
	}
	for _, c := range []*election.Client{nil, {}} {
		for _, call := range calls {
			var err error
			panicked := func() (p any) {
				defer func() { p = recover() }()
				err = call.f(c)
				return nil
			}()
			if panicked != nil {
				t.Errorf("%s on a %v Client panicked: %v; want task.ErrInvalidArgument", call.name, c, panicked)
			} else if !errors.Is(err, task.ErrInvalidArgument) {
				t.Errorf("%s on a %v Client = %v, want task.ErrInvalidArgument", call.name, c, err)
			}
		}
	}
	for name, tk := range map[string]func() error{
		"Resign": func() error {
			w, _ := newWorld(t, 1, 1, fakezk.Config{})
			_, err := sim.Run(w, 0, (&election.Leadership{}).Resign())
			return err
		},
		"Fenced": func() error {
			w, _ := newWorld(t, 1, 1, fakezk.Config{})
			_, err := sim.Run(w, 0, (&election.Leadership{}).Fenced())
			return err
		},
	} {
		var err error
		panicked := func() (p any) {
			defer func() { p = recover() }()
			err = tk()
			return nil
		}()
		if panicked != nil {
			t.Errorf("%s of a zero Leadership panicked: %v; want task.ErrInvalidArgument", name, panicked)
		} else if !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("%s of a zero Leadership = %v, want task.ErrInvalidArgument", name, err)
		}
	}
}

// A nil or zero Leadership (not won by a campaign) leads nothing: its
// state is Ended, IsLeader false, Done closed and Err says why, so that a
// loop `for l.IsLeader() { ... }` or a `<-l.Done()` over one never acts
// as a leader or blocks forever. A zero one reported Leading (State's zero
// value) and its Done blocked forever; a nil one panicked.
func TestZeroLeadershipLeadsNothing(t *testing.T) {
	for name, l := range map[string]*election.Leadership{"zero": {}, "nil": nil} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s Leadership: panicked: %v", name, p)
				}
			}()
			if l.IsLeader() || l.State() != election.Ended {
				t.Errorf("%s Leadership: IsLeader %v, State %v; want false, Ended", name, l.IsLeader(), l.State())
			}
			select {
			case <-l.Done():
			default:
				t.Errorf("%s Leadership: Done is not closed", name)
			}
			if err := l.Err(); !errors.Is(err, task.ErrInvalidArgument) {
				t.Errorf("%s Leadership: Err = %v, want task.ErrInvalidArgument", name, err)
			}
			if l.Path() != "" || l.Token() != 0 || l.Session() != (task.Session{}) {
				t.Errorf("%s Leadership: Path %q, Token %d, Session %+v; want zero values", name, l.Path(), l.Token(), l.Session())
			}
		}()
	}
}
