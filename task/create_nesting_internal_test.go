package task

import (
	"fmt"
	"slices"
	"testing"
)

// Create nests its calls as the map over CreateWith it was written as
// (mapCreate below): started at every depth around maxDepth, in a live
// scope and in an ended one, with the reply at once, it sends (or fails)
// at the same depth, through the task queue at the same point, and its
// continuation runs at the same depth with the same outcome. So a chain
// of Creates trampolines where it did, and its steps keep their order.
func TestCreateNestsAsAMapOverCreateWith(t *testing.T) {
	mapCreate := func(path string) Task[string] {
		cw := CreateWith(&CreateRequest{Path: path, ACL: OpenACL})
		return func(s *Scope, k Cont[string]) {
			Run(s, cw, func(c Created, err error) {
				if err != nil {
					k("", err)
					return
				}
				k(c.Path, nil)
			})
		}
	}
	trace := func(mk func(string) Task[string], depth int, ended bool) []string {
		var out []string
		rt := &depthSendRuntime{out: &out}
		rt.root = NewSessionScope(rt, &Session{ID: 1, Epoch: 1})
		root := rt.root
		s := root.Child()
		if ended {
			s.Cancel(nil)
		}
		*root.depth = depth
		Run(s, mk("/a"), func(p string, err error) {
			out = append(out, fmt.Sprintf("k(%q, %v) at %d", p, err, *root.depth))
		})
		for len(rt.sent) > 0 || len(rt.queue) > 0 {
			if len(rt.sent) > 0 {
				rt.take().Receive(Response{Path: "/a0"})
				continue
			}
			out = append(out, "scheduled")
			rt.drain()
		}
		return out
	}
	for depth := maxDepth - 4; depth <= maxDepth+1; depth++ {
		for _, ended := range []bool{false, true} {
			got := trace(func(p string) Task[string] { return Create(p, nil, Persistent) }, depth, ended)
			want := trace(mapCreate, depth, ended)
			if !slices.Equal(got, want) {
				t.Errorf("from depth %d (ended %v): Create %q, the map over CreateWith %q", depth, ended, got, want)
			}
		}
	}
}

// depthSendRuntime is sendRuntime that notes the depth each request is
// sent at.
type depthSendRuntime struct {
	sendRuntime
	out *[]string
}

func (r *depthSendRuntime) Send(req Request, rcv Receiver, w Watcher) {
	*r.out = append(*r.out, fmt.Sprintf("sent at %d", r.depth))
	r.sendRuntime.Send(req, rcv, w)
}
