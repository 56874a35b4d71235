package rig_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/internal/rig"
	"github.com/zkflow/zkflow/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRigConnected(t *testing.T) {
	r := rig.New(t)
	if r.Ex.Paused() {
		t.Fatal("rig not connected")
	}
	o := rig.Submit(r, task.Value(3))
	r.Idle()
	o.Want(t, 1, nil)
	if o.V != 3 {
		t.Fatalf("v = %d", o.V)
	}
}
