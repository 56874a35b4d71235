package chaos_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// The schedule's own checks, on a real ensemble: a server that is down
// though the test did not kill it is named before the next kill
// (allRunning), and a stall with no leader among the servers left ends
// with the killed server restarted early, after which the workloads go
// on (awaitDown). Two servers down stand in for an election that never
// settles: either way no server leads.
func TestScheduleChecksTheEnsemble(t *testing.T) {
	zkserver.Require(t)
	ens := zkserver.Ensemble(t, 3, zkserver.Options{MaxSessionTimeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := &run{t: t, ctx: ctx, addrs: ens.Addrs(), root: "/schedule", tick: make(chan struct{}, 1), electionWait: 2 * time.Second}
	admin := r.dial(r.addrs)
	if _, err := executor.Await(ctx, admin, task.Create(r.root, nil, task.Persistent)); err != nil {
		t.Fatal(err)
	}
	ids := r.startIDs([]int64{1, 10})
	stop := func() {
		r.stop.Store(true)
		r.wg.Wait()
	}
	defer stop()
	if err := r.await(20); err != nil {
		t.Fatalf("with every server up: %v", err)
	}
	if err := allRunning(ens); err != nil {
		t.Fatalf("allRunning with every server up: %v", err)
	}

	ens.Kill(0)
	ens.Kill(1)
	err := allRunning(ens)
	if err == nil || !strings.Contains(err.Error(), "server 0 ") {
		t.Fatalf("allRunning with servers 0 and 1 killed: %v, want server 0 named", err)
	}
	early, err := r.awaitDown(ens, 0, 10)
	if err != nil || !early {
		t.Fatalf("awaitDown with no leader: early restart %v, %v; want the victim restarted and the workloads going on", early, err)
	}
	if !ens.Server(0).Running() {
		t.Fatal("server 0 not running after its early restart")
	}
	if err := ens.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	early, err = r.awaitDown(ens, 1, 10) // nothing down: no early restart
	if err != nil || early {
		t.Fatalf("awaitDown with every server up: early restart %v, %v", early, err)
	}
	stop()
	drawn, _ := ids.judge()
	t.Logf("%d IDs drawn, all distinct, across two servers killed and restarted", drawn)
}
