package fakezk_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/reqcheck"
	"github.com/zkflow/zkflow/task"
)

// Requests longer than the packet limit on the wire (jute.maxbuffer,
// 0xfffff by default) fail with ErrDataTooLarge and are not applied, as
// zkadapter rejects them before sending; one byte less is fine.
func TestPacketLimit(t *testing.T) {
	const p = "/big"
	// set: header 8, path 4+len, data 4+n, version 4.
	atLimit := task.MaxPacketSize - (8 + 4 + len(p) + 4 + 4)
	acl := 4 + 4 + 4 + len("world") + 4 + len("anyone") // create: acl count and entry, flags; no version
	cases := []struct {
		name  string
		limit int
		req   task.Request
		want  error
	}{
		{"set at limit", 0, &task.SetDataRequest{Path: p, Data: make([]byte, atLimit), Version: -1}, nil},
		{"set over limit", 0, &task.SetDataRequest{Path: p, Data: make([]byte, atLimit+1), Version: -1}, task.ErrDataTooLarge},
		{"create over limit", 0, &task.CreateRequest{Path: p + "/c", Data: make([]byte, atLimit+1-acl-len("/c")), ACL: task.OpenACL}, task.ErrDataTooLarge},
		{"create at limit", 0, &task.CreateRequest{Path: p + "/c", Data: make([]byte, atLimit-acl-len("/c")), ACL: task.OpenACL}, nil},
		{"multi over limit", 0, &task.MultiRequest{Ops: []task.MultiOp{
			&task.SetDataRequest{Path: p, Data: make([]byte, atLimit/2), Version: -1},
			&task.SetDataRequest{Path: p, Data: make([]byte, atLimit/2), Version: -1},
		}}, task.ErrDataTooLarge},
		{"small limit", 100, &task.SetDataRequest{Path: p, Data: make([]byte, 100), Version: -1}, task.ErrDataTooLarge},
		{"no limit", -1, &task.SetDataRequest{Path: p, Data: make([]byte, task.MaxDataSize), Version: -1}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakezk.New(fakezk.Config{MaxPacketSize: tc.limit})
			c := srv.Connect(fakezk.ConnConfig{})
			c.Start(func(task.Event) {})
			defer c.Close()
			var got task.Response
			c.Do(&task.CreateRequest{Path: p, ACL: task.OpenACL}, func(r task.Response) { got = r }, nil)
			if got.Err != nil {
				t.Fatal(got.Err)
			}
			c.Do(tc.req, func(r task.Response) { got = r }, nil)
			if (got.Err == nil) != (tc.want == nil) || !errors.Is(got.Err, tc.want) {
				t.Fatalf("error = %v, want %v", got.Err, tc.want)
			}
			st, _ := srv.NodeStat(p)
			if applied := st.Version > 0 || st.NumChildren > 0; applied != (tc.want == nil) {
				t.Fatalf("applied = %v with error %v", applied, got.Err)
			}
		})
	}
}

// A multi's create result carries the name only, no Stat, as ZooKeeper
// 3.8 answers the opCreate zkadapter sends inside a multi (found by the
// differential test, internal/difftest).
func TestMultiCreateHasNoStat(t *testing.T) {
	srv := fakezk.New(fakezk.Config{})
	c := srv.Connect(fakezk.ConnConfig{})
	c.Start(func(task.Event) {})
	defer c.Close()
	var got task.Response
	c.Do(&task.MultiRequest{Ops: []task.MultiOp{
		&task.CreateRequest{Path: "/a", Data: []byte("x"), ACL: task.OpenACL, Mode: task.Ephemeral},
	}}, func(r task.Response) { got = r }, nil)
	if got.Err != nil || len(got.Results) != 1 {
		t.Fatalf("multi: %+v", got)
	}
	if r := got.Results[0]; r.Path != "/a" || r.Stat != (task.Stat{}) {
		t.Fatalf("result = %+v, want path /a and a zero Stat", r)
	}
}

// task.MaxDataSize's doc, at its boundary: the largest create of "/a"
// with the open ACL carries MaxPacketSize - PacketSize(the empty create)
// = 1,048,526 bytes, one more is refused, and so is data of exactly
// MaxDataSize. The refusal names the sizes and the limit.
func TestMaxDataSizeBoundary(t *testing.T) {
	const p = "/a"
	largest := task.MaxPacketSize - reqcheck.PacketSize(&task.CreateRequest{Path: p, ACL: task.OpenACL})
	if largest != 1048526 {
		t.Fatalf("largest create of %s = %d, the doc says 1048526", p, largest)
	}
	for _, tc := range []struct {
		n    int
		want string // "" for success, else what the message must say
	}{
		{largest, ""},
		{largest + 1, fmt.Sprintf("the request is %d bytes on the wire, over the packet limit of %d", task.MaxPacketSize+1, task.MaxPacketSize)},
		{task.MaxDataSize, fmt.Sprintf("over the packet limit of %d", task.MaxPacketSize)},
		{task.MaxDataSize + 1, fmt.Sprintf("%d bytes of data, over the limit of %d", task.MaxDataSize+1, task.MaxDataSize)},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			srv := fakezk.New(fakezk.Config{})
			c := srv.Connect(fakezk.ConnConfig{})
			c.Start(func(task.Event) {})
			defer c.Close()
			var got task.Response
			c.Do(&task.CreateRequest{Path: p, Data: make([]byte, tc.n), ACL: task.OpenACL}, func(r task.Response) { got = r }, nil)
			if tc.want == "" {
				if got.Err != nil {
					t.Fatalf("create of %d bytes: %v", tc.n, got.Err)
				}
				return
			}
			if !errors.Is(got.Err, task.ErrDataTooLarge) || !strings.Contains(got.Err.Error(), tc.want) {
				t.Fatalf("create of %d bytes: %v, want ErrDataTooLarge saying %q", tc.n, got.Err, tc.want)
			}
			if _, ok := srv.NodeStat(p); ok {
				t.Fatalf("the refused create was applied")
			}
		})
	}
}

// PacketRoom (task.PacketSizer) says what Do does: room 0 is applied,
// one byte more refused with ErrDataTooLarge, the Conn's root counted in
// every path, the server's MaxPacketSize the limit.
func TestPacketRoomAgreesWithDo(t *testing.T) {
	for _, tc := range []struct {
		root  string
		limit int
	}{{"", 0}, {"/a-root-of-some-length", 0}, {"/r", 4096}} {
		srv := fakezk.New(fakezk.Config{Async: true, MaxPacketSize: tc.limit})
		if tc.root != "" {
			if err := srv.AdminCreate(tc.root, nil, 0); err != nil {
				t.Fatal(err)
			}
		}
		c := srv.Connect(fakezk.ConnConfig{Root: tc.root})
		if err := c.Start(func(task.Event) {}); err != nil {
			t.Fatal(err)
		}
		set := func(n int) task.Request {
			return &task.SetDataRequest{Path: "/", Data: make([]byte, n), Version: -1}
		}
		room := c.PacketRoom(set(0))
		for _, n := range []int{room, room + 1} {
			got := make(chan task.Response, 1)
			c.Do(set(n), func(r task.Response) { got <- r }, nil)
			resp := <-got
			if got := c.PacketRoom(set(n)); (got < 0) != errors.Is(resp.Err, task.ErrDataTooLarge) || (got >= 0) != (resp.Err == nil) {
				t.Errorf("root %q, limit %d: %d bytes: room %d, Do: %v", tc.root, tc.limit, n, got, resp.Err)
			}
		}
		srv.Close()
	}
}
