package fakezk_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
)

// A fault given a nil Conn (SessionConn of a session not live yet) does
// nothing: no panic, and the server goes on serving.
func TestFaultOnNilConn(t *testing.T) {
	s := fakezk.New(fakezk.Config{})
	defer s.Close()
	c := s.SessionConn(12345)
	if c != nil {
		t.Fatalf("SessionConn of no session = %v", c)
	}
	s.Drop(c, true)
	s.Partition(c, time.Second, false)
	s.Expire(c)
	s.Delay(c, time.Second)
	s.Crash(c, true)
	s.Freeze(c, time.Second)
	if _, ok := s.NodeStat("/"); !ok {
		t.Fatal("the server lost its root")
	}
}
