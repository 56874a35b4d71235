package reqcheck_test

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestValidate(t *testing.T) {
	big := make([]byte, task.MaxDataSize+1)
	cases := []struct {
		name string
		req  task.Request
		want error
	}{
		{"nil", nil, task.ErrInvalidArgument},
		{"nil create", (*task.CreateRequest)(nil), task.ErrInvalidArgument},
		{"nil delete", (*task.DeleteRequest)(nil), task.ErrInvalidArgument},
		{"bad mode", &task.CreateRequest{Path: "/a", Mode: 42}, task.ErrInvalidArgument},
		{"ttl without ttl", &task.CreateRequest{Path: "/a", Mode: task.PersistentWithTTL}, task.ErrInvalidArgument},
		{"negative ttl", &task.CreateRequest{Path: "/a", Mode: task.PersistentWithTTL, TTL: -time.Second}, task.ErrInvalidArgument},
		{"ttl under a millisecond", &task.CreateRequest{Path: "/a", Mode: task.PersistentWithTTL, TTL: time.Millisecond - 1}, task.ErrInvalidArgument},
		{"ttl over MaxTTL", &task.CreateRequest{Path: "/a", Mode: task.PersistentSequentialWithTTL, TTL: task.MaxTTL + time.Millisecond}, task.ErrInvalidArgument},
		{"ttl in a multi over MaxTTL", &task.MultiRequest{Ops: []task.MultiOp{
			&task.CreateRequest{Path: "/a", Mode: task.PersistentWithTTL, TTL: task.MaxTTL + time.Millisecond},
		}}, task.ErrInvalidArgument},
		{"too large", &task.CreateRequest{Path: "/a", Data: big}, task.ErrDataTooLarge},
		{"set too large", &task.SetDataRequest{Path: "/a", Data: big}, task.ErrDataTooLarge},
		{"bad path", &task.GetDataRequest{Path: "a"}, task.ErrInvalidPath},
		{"multi nil op", &task.MultiRequest{Ops: []task.MultiOp{nil}}, task.ErrInvalidArgument},
		{"multi bad path", &task.MultiRequest{Ops: []task.MultiOp{&task.CheckRequest{Path: "//"}}}, task.ErrInvalidPath},
		{"multi total too large", &task.MultiRequest{Ops: []task.MultiOp{
			&task.SetDataRequest{Path: "/a", Data: big[:task.MaxDataSize/2+1]},
			&task.SetDataRequest{Path: "/b", Data: big[:task.MaxDataSize/2+1]},
		}}, task.ErrDataTooLarge},
		{"nil getACL", (*task.GetACLRequest)(nil), task.ErrInvalidArgument},
		{"nil setACL", (*task.SetACLRequest)(nil), task.ErrInvalidArgument},
		{"getACL bad path", &task.GetACLRequest{Path: "/a/"}, task.ErrInvalidPath},
		{"setACL bad path", &task.SetACLRequest{Path: "a", ACL: task.OpenACL}, task.ErrInvalidPath},
		{"setACL empty ACL is the server's to refuse", &task.SetACLRequest{Path: "/a"}, nil},
		{"ok", &task.CreateRequest{Path: "/a/", Mode: task.EphemeralSequential}, nil},
		{"ok ttl of a millisecond", &task.CreateRequest{Path: "/a", Mode: task.PersistentWithTTL, TTL: time.Millisecond}, nil},
		{"ok ttl at MaxTTL", &task.CreateRequest{Path: "/a", Mode: task.PersistentWithTTL, TTL: task.MaxTTL}, nil},
		{"ok ttl at MaxTTL plus a fraction (sent as MaxTTL)", &task.CreateRequest{Path: "/a", Mode: task.PersistentWithTTL, TTL: task.MaxTTL + time.Millisecond - 1}, nil},
		{"ok ttl ignored by other modes", &task.CreateRequest{Path: "/a", Mode: task.Persistent, TTL: -time.Second}, nil},
		{"ok at limit", &task.SetDataRequest{Path: "/a", Data: big[:task.MaxDataSize]}, nil},
	}
	for _, tc := range cases {
		err := reqcheck.Validate(tc.req, 0)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: Validate = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// The sizes follow the jute records GetACLRequest {path} and
// SetACLRequest {path, vector<ACL>, version}, after the 8-byte header.
func TestPacketSizeACL(t *testing.T) {
	if n := reqcheck.PacketSize(&task.GetACLRequest{Path: "/ab"}); n != 8+4+3 {
		t.Errorf("getACL size %d", n)
	}
	set := &task.SetACLRequest{Path: "/ab", ACL: []task.ACL{{Perms: 1, Scheme: "world", ID: "anyone"}}}
	if n := reqcheck.PacketSize(set); n != 8+(4+3)+4+(4+4+5+4+6)+4 {
		t.Errorf("setACL size %d", n)
	}
	if n := reqcheck.PacketSize(&task.SetACLRequest{Path: "/ab"}); n != 8+(4+3)+4+4 {
		t.Errorf("setACL empty size %d", n)
	}
}

// Validate refuses bad modes, types and paths before anything is sent.
func TestValidateWatchRequests(t *testing.T) {
	for _, tc := range []struct {
		req  task.Request
		want error
	}{
		{&task.AddWatchRequest{Path: "/a", Mode: task.WatchPersistent}, nil},
		{&task.AddWatchRequest{Path: "/a", Mode: 2}, task.ErrInvalidArgument},
		{&task.AddWatchRequest{Path: "a"}, task.ErrInvalidPath},
		{(*task.AddWatchRequest)(nil), task.ErrInvalidArgument},
		{&task.RemoveWatchesRequest{Path: "/a", Type: task.WatcherAny}, nil},
		{&task.RemoveWatchesRequest{Path: "/a", Type: 4}, task.ErrInvalidArgument},
		{&task.RemoveWatchesRequest{Path: "/a/", Type: task.WatcherData}, task.ErrInvalidPath},
		{(*task.RemoveWatchesRequest)(nil), task.ErrInvalidArgument},
	} {
		if err := reqcheck.Validate(tc.req, 0); !errors.Is(err, tc.want) {
			t.Errorf("Validate(%#v) = %v, want %v", tc.req, err, tc.want)
		}
	}
}

// addWatch and removeWatches carry a path and an int (the mode, the
// watcher type): a long path makes them long on the wire too.
func TestPacketSizeWatchRequests(t *testing.T) {
	if n := reqcheck.PacketSize(&task.AddWatchRequest{Path: "/ab", Mode: task.WatchPersistentRecursive}); n != 8+(4+3)+4 {
		t.Errorf("addWatch /ab: %d bytes", n)
	}
	if n := reqcheck.PacketSize(&task.RemoveWatchesRequest{Path: "/ab", Type: task.WatcherAny}); n != 8+(4+3)+4 {
		t.Errorf("removeWatches /ab: %d bytes", n)
	}
}
