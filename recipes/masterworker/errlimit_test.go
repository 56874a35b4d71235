package masterworker_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// PROTOCOL.md, Worker step 4: "any other handler error is written as a
// failed status (Result.Failed)"; Handler's doc: "or fails (the failure
// is written to the status, except for task.ErrSessionExpired,
// task.ErrClosed and task.ErrCanceled, which stop the worker instead)";
// the package doc: "Once the faults stop and a primary and a worker are
// up, every task gets its status".
//
// Schedule: a primary and two workers are up; a handler fails with an
// error whose message is over the server's limit (a handler that quotes
// its large input in its error). writeStatus's multi fails with
// ErrDataTooLarge; the case that turned that into a short failed status
// only covered a successful value, so the error was passed on and the
// worker's Run ended with it. The primary moved the task to the other
// worker, which ended the same way: the task never got a status and
// every worker was gone (canary masterworker/long-error-ends-worker).
func TestHandlerErrorOverTheLimitFailsItsTask(t *testing.T) {
	canarytest.Both(t, "masterworker/long-error-ends-worker", handlerErrorOverTheLimit)
}

func handlerErrorOverTheLimit(t *testing.T, bug bool) {
	w := newWorld(t, 4, nil)
	sys := newSys(t, "/mw")
	m, _ := sys.Master("m")
	h := func(j masterworker.Job) task.Task[[]byte] {
		if string(j.Data) == "big" {
			return task.Fail[[]byte](errors.New("bad input: " + strings.Repeat("v", task.MaxDataSize+10)))
		}
		return task.Value(j.Data)
	}
	wk1, _ := sys.Worker("w1", h)
	wk2, _ := sys.Worker("w2", h)
	mo := sim.Submit(w, 0, m.Run())
	wo1 := sim.Submit(w, 1, wk1.Run())
	wo2 := sim.Submit(w, 3, wk2.Run())
	if !w.Settle(func() bool { return m.Primary() && wk1.Registered() && wk2.Registered() }) {
		t.Fatal("no primary or no workers")
	}
	o := &sim.Outcome[masterworker.Result]{}
	executor.SubmitWith(w.Execs[2], c.Then(sys.Submit("c_1", []byte("big")), sys.Wait),
		executor.Options{Deadline: w.Clock.Now().Add(time.Minute)},
		func(r masterworker.Result, err error) { o.V, o.Err, o.Done = r, err, true })
	w.Settle(func() bool { return o.Done })
	want := "masterworker: task " // the short status names the task and says why
	if ok := o.Done && o.Err == nil && o.V.Failed && strings.HasPrefix(string(o.V.Data), want) && strings.Contains(string(o.V.Data), "error's message"); ok == bug {
		t.Errorf("canary %v: task whose handler failed with a long message: done %v, failed %v, %d bytes of status, %v", bug, o.Done, o.V.Failed, len(o.V.Data), o.Err)
	}
	if (wo1.Done || wo2.Done) != bug {
		t.Errorf("canary %v: workers ended: w1 %v (%v), w2 %v (%v)", bug, wo1.Done, wo1.Err, wo2.Done, wo2.Err)
	}
	if mo.Done {
		t.Errorf("master ended: %v", mo.Err)
	}
}
