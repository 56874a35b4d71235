package sim_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/task"
)

// errMine is an error of a face's own, for the rules of the cases.
var errMine = errors.New("mine")

// A Call's judge reports every outcome a blocking face's doc forbids,
// and nothing else: each case makes one call in an actor, with its
// context live or ended before the call (canceled, or past its
// deadline), the call doing what the case says (sleeping on the clock,
// or waiting through the context it is given), and wants the seed's
// violations to hold want ("" for none).
func TestCallJudge(t *testing.T) {
	canceled := func(err error) func() error { return func() error { return err } }
	type ctxKind int
	const (
		live ctxKind = iota
		ended
		pastDeadline
	)
	cases := []struct {
		name    string
		ctx     ctxKind
		counted bool          // sim.BeginCallCounted
		sleep   time.Duration // on the clock, before the call returns
		wait    bool          // waits for the clock through the call's context
		ret     error
		rules   sim.CallRules
		want    string
	}{
		{name: "nil", ret: nil},
		{name: "its context's end", ctx: ended, ret: task.ErrCanceled},
		{name: "its deadline", ctx: pastDeadline, ret: task.ErrDeadlineExceeded},
		{name: "a context's error while it lives", ret: task.ErrCanceled, want: "a context's error while its context lives"},
		{name: "a deadline while it lives", ret: task.ErrDeadlineExceeded, want: "a context's error while its context lives"},
		{name: "the wrong context error", ctx: ended, ret: task.ErrDeadlineExceeded, want: "not its context's error (context canceled)"},
		{name: "an error not allowed", ret: task.ErrBadVersion, want: "not an error it may end with"},
		{name: "an error May has", ret: task.ErrBadVersion, rules: sim.CallRules{May: []error{task.ErrBadVersion}}},
		{name: "a connection loss", ret: task.ErrConnectionLoss, want: "an error a retry settles"},
		{name: "an ACL not in May", ret: task.ErrNoAuth, want: "not an error it may end with"},
		{name: "an expiry never", ret: task.ErrSessionExpired, rules: sim.CallRules{Expiry: sim.ExpiryNever, ExpiryWhy: "it runs again"}, want: "session expiry, which it never ends with (it runs again)"},
		{name: "an expiry while the context lives", ret: task.ErrSessionExpired, rules: sim.CallRules{Expiry: sim.ExpiryOnceEnded}, want: "session expiry while its context lives"},
		{name: "an expiry once the context ended", ctx: ended, ret: task.ErrSessionExpired, rules: sim.CallRules{Expiry: sim.ExpiryOnceEnded},
			want: "its context had ended (context canceled), and it returned session expired"},
		{name: "an expiry by May", ret: task.ErrSessionExpired, rules: sim.CallRules{May: []error{task.ErrSessionExpired}}},
		{name: "an expiry not in May", ret: task.ErrSessionExpired, want: "not an error it may end with"},
		{name: "First before a context's end", ret: task.ErrCanceled, rules: sim.CallRules{First: func(error) (string, bool) { return "", true }}},
		{name: "First's verdict", ret: errMine, rules: sim.CallRules{May: []error{errMine}, First: func(error) (string, bool) { return "first says no", true }}, want: "first says no"},
		{name: "Also's verdict", ret: errMine, rules: sim.CallRules{May: []error{errMine}, Also: func(error) (string, bool) { return "also says no", true }}, want: "also says no"},
		{name: "Also after a context's end", ret: task.ErrCanceled, rules: sim.CallRules{Also: func(error) (string, bool) { return "", true }}, want: "a context's error while its context lives"},
		{name: "ended with a running object", ret: errMine, rules: sim.CallRules{Also: sim.EndedWith("cache", canceled(nil), task.ErrNoAuth)}, want: "an error, and the cache has not ended"},
		{name: "ended with another error", ret: errMine, rules: sim.CallRules{Also: sim.EndedWith("cache", canceled(task.ErrNoAuth), task.ErrNoAuth)}, want: "not the cache's error"},
		{name: "ended by an error not allowed", ret: errMine, rules: sim.CallRules{Also: sim.EndedWith("cache", canceled(errMine), task.ErrNoAuth)}, want: "the cache ended with mine while it ran"},
		{name: "ended as allowed", ret: task.ErrNoAuth, rules: sim.CallRules{Also: sim.EndedWith("cache", canceled(task.ErrNoAuth), task.ErrNoAuth)}},
		{name: "nil after its context ended", ctx: ended, ret: nil, want: "its context had ended (context canceled), and it returned <nil>"},
		{name: "late after its context ended", ctx: ended, sleep: 10 * time.Millisecond, ret: task.ErrCanceled, want: "its context had ended, and it returned canceled after 10ms"},
		{name: "a parked call a little late", ctx: ended, sleep: sim.LateWake, ret: task.ErrCanceled, rules: sim.CallRules{Parks: true}},
		{name: "a parked call too late", ctx: ended, sleep: sim.LateWake + time.Millisecond, ret: task.ErrCanceled, rules: sim.CallRules{Parks: true}, want: "and it returned canceled after 201ms"},
		{name: "ready after its context ended", ctx: ended, sleep: time.Second, ret: nil, rules: sim.CallRules{Ready: true}},
		{name: "counted, waiting", ctx: ended, counted: true, wait: true, ret: task.ErrCanceled, want: "its context had ended, and it returned canceled after waiting 1 times"},
		{name: "counted, late on the clock alone", ctx: ended, counted: true, sleep: time.Second, ret: task.ErrCanceled},
		{name: "counted, the wrong error", ctx: ended, counted: true, ret: errMine, rules: sim.CallRules{May: []error{errMine}}, want: "its context had ended (context canceled), and it returned mine"},
		{name: "refused instead of its context's end", ctx: ended, counted: true, ret: errMine, rules: sim.CallRules{May: []error{errMine}, Refused: []error{errMine}}},
		{name: "refused, waiting", ctx: ended, counted: true, wait: true, ret: errMine, rules: sim.CallRules{May: []error{errMine}, Refused: []error{errMine}}, want: "after waiting 1 times"},
		{name: "refused late", sleep: time.Millisecond, ret: errMine, rules: sim.CallRules{May: []error{errMine}, Refused: []error{errMine}, RefusesAtOnce: true}, want: "mine after 1ms: it refuses at once"},
		{name: "refused late, parked", ctx: ended, sleep: time.Millisecond, ret: errMine, rules: sim.CallRules{May: []error{errMine}, Refused: []error{errMine}, RefusesAtOnce: true, Parks: true}, want: "mine after 1ms: it refuses at once"},
		{name: "refused at once", ctx: ended, ret: errMine, rules: sim.CallRules{May: []error{errMine}, Refused: []error{errMine}, RefusesAtOnce: true, Parks: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var judged, over bool
			sc := sim.Scenario{
				Name:     "calljudge",
				Clients:  1,
				Duration: time.Second,
				Workload: func(r *sim.Trial) {
					r.Go(0, func(a *sim.Actor) {
						ctx, cancel := a.WithCancel(a.Context())
						defer cancel()
						switch tc.ctx {
						case ended:
							cancel()
						case pastDeadline:
							ctx, cancel = a.WithTimeout(ctx, time.Millisecond)
							defer cancel()
							_ = a.Sleep(a.Context(), 2*time.Millisecond)
						}
						var c sim.Call
						cctx := ctx
						if tc.counted {
							c, cctx = sim.BeginCallCounted(r, a, ctx)
						} else {
							c = sim.BeginCall(r, a, ctx)
						}
						if tc.sleep > 0 {
							_ = a.Sleep(a.Context(), tc.sleep)
						}
						if tc.wait {
							// Through the call's context, as a face waits.
							_ = a.Sleep(context.WithoutCancel(cctx), time.Millisecond)
						}
						over = c.Over()
						judged = c.Judge("call", tc.ret, tc.rules)
						for !r.Stopping() && a.Context().Err() == nil {
							r.Progress(0)
							_ = a.Sleep(a.Context(), 50*time.Millisecond)
						}
					})
				},
			}
			res := sim.RunSeed(sc, 1, false)
			switch {
			case tc.want == "" && res.Err != nil:
				t.Fatalf("violations: %v", res.Err)
			case tc.want != "" && res.Err == nil:
				t.Fatalf("no violation, want %q", tc.want)
			case tc.want != "" && !strings.Contains(res.Err.Error(), tc.want):
				t.Fatalf("violations: %v\nwant %q", res.Err, tc.want)
			}
			if wantOver := tc.ctx != live; over != wantOver || judged != (wantOver && !tc.rules.Ready) {
				t.Errorf("Over %v, judged at once %v, for a context ended %v before the call", over, judged, wantOver)
			}
		})
	}
}
