package fakezk_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// FuzzOps runs operation sequences decoded from the input against three
// sessions in deterministic mode, with faults, and checks the server's
// invariants after every step: every ephemeral has a live owner, no node
// has a child under an ephemeral, Stat agrees with the node, and a node's
// cversion never goes down while it lives.
func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{0, 1, 0, 0x21, 0x32, 9, 9, 9, 0x83, 0x44, 10, 11, 12, 13, 14, 15})
	f.Add([]byte("create the world, then expire it"))
	f.Fuzz(func(t *testing.T, in []byte) {
		clk := fakezk.NewClock(time.Time{})
		srv := fakezk.New(fakezk.Config{Clock: clk, Deterministic: true, ExtendedTypes: true})
		var conns []*fakezk.Conn
		for range 3 {
			c := srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second})
			c.Start(func(task.Event) {})
			conns = append(conns, c)
		}
		paths := []string{"/a", "/a/b", "/a/b/c", "/e", "/e/f", "/a/s-"}
		cv := map[[2]int64]int32{} // (path index, czxid) -> cversion seen
		done := func(task.Response) {}
		watch := func(task.Event) {}
		for i := 0; i+1 < len(in); i += 2 {
			op, arg := in[i], in[i+1]
			c := conns[int(arg>>4)%len(conns)]
			p := paths[int(arg&0x0f)%len(paths)]
			switch op % 16 {
			case 0:
				c.Do(&task.CreateRequest{Path: p, ACL: task.OpenACL, Mode: task.CreateMode(op / 16 % 7),
					TTL: time.Duration(1+op%3) * time.Second}, done, nil)
			case 1:
				c.Do(&task.DeleteRequest{Path: p, Version: int32(op/16%3) - 1}, done, nil)
			case 2:
				c.Do(&task.SetDataRequest{Path: p, Data: []byte{op}, Version: int32(op/16%3) - 1}, done, nil)
			case 3:
				c.Do(&task.ExistsRequest{Path: p, Watch: true}, done, watch)
			case 4:
				c.Do(&task.GetChildrenRequest{Path: p, Watch: true}, done, watch)
			case 5:
				c.Do(&task.MultiRequest{Ops: []task.MultiOp{
					&task.CreateRequest{Path: p, ACL: task.OpenACL, Mode: task.Ephemeral},
					&task.DeleteRequest{Path: paths[int(op/16)%len(paths)], Version: -1},
				}}, done, nil)
			case 6:
				srv.Drop(c, op&0x10 != 0)
			case 7:
				srv.Expire(c)
			case 8:
				srv.Partition(c, time.Duration(op/16)*time.Second, op&0x10 != 0)
			case 9:
				clk.Advance(time.Duration(arg) * 50 * time.Millisecond)
			case 10:
				srv.Delay(c, time.Duration(arg)*10*time.Millisecond)
			case 11:
				c.Close()
			case 12:
				srv.Restart(time.Duration(op/16) * time.Second)
			case 13:
				srv.SetCounters(p, 1<<31-2, 1<<31-2)
			default:
				srv.Step()
			}
			srv.Step()
			if err := srv.CheckInvariants(); err != nil {
				t.Fatalf("after op %d: %v", i/2, err)
			}
			for k, path := range paths {
				if st, ok := srv.NodeStat(path); ok {
					key := [2]int64{int64(k), st.Czxid}
					if old, seen := cv[key]; seen && st.Cversion < old && op%16 != 13 {
						t.Fatalf("%s: cversion went from %d to %d", path, old, st.Cversion)
					}
					cv[key] = st.Cversion
				}
			}
		}
		settle(t, srv, clk)
		if err := srv.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	})
}

// settle runs the server and its clock until nothing is pending, failing
// if that does not happen in a bounded number of rounds.
func settle(t testing.TB, srv *fakezk.Server, clk *fakezk.Clock) {
	for range 100000 {
		if srv.RunUntilIdle() == 0 && !clk.AdvanceToNext() {
			return
		}
	}
	t.Fatalf("server did not settle: %d timers pending", clk.Pending())
}
