package zkadapter

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// A container or TTL create inside a multi: ZooKeeper 3.8.0 answers it as
// create2 (name and Stat); through zkadapter the result shows the Stat.
// The in-memory fakezk answered every create of a multi with the name
// alone (a zero Stat); it now answers by mode, as the server does.
func TestMultiContainerAndTTLCreatesHaveAStat(t *testing.T) {
	zk := zkserver.Standalone(t, zkserver.Options{ExtendedTypes: true})
	rc, _ := open(t, Config{Servers: zk.Addrs(), SessionTimeout: 2 * time.Second})
	srv := fakezk.New(fakezk.Config{ExtendedTypes: true})
	fc := srv.Connect(fakezk.ConnConfig{})
	fc.Start(func(task.Event) {})
	t.Cleanup(func() { fc.Close() })
	run := func(c task.Conn) string {
		ch := make(chan task.Response, 1)
		c.Do(&task.MultiRequest{Ops: []task.MultiOp{
			&task.CreateRequest{Path: "/k", ACL: task.OpenACL, Mode: task.Container},
			&task.CreateRequest{Path: "/t", ACL: task.OpenACL, Mode: task.PersistentWithTTL, TTL: time.Minute},
			&task.CreateRequest{Path: "/p", ACL: task.OpenACL, Mode: task.Persistent},
		}}, func(r task.Response) { ch <- r }, nil)
		r := <-ch
		s := fmt.Sprintf("err %v:", r.Err)
		for _, res := range r.Results {
			s += fmt.Sprintf(" %s stat-set=%v", res.Path, res.Stat != (task.Stat{}))
		}
		return s
	}
	if real, fake := run(rc), run(fc); real != fake {
		t.Errorf("real %s\nfake %s", real, fake)
	}
}
