// Package difftest compares two task.Conn implementations by running the
// same seeded random operation sequences on both and normalizing every
// result: the differential fidelity check of fakezk against a real
// ZooKeeper server (through zkadapter), and of fakezk against itself.
//
// A sequence works under its own top-level node, /d<seed>, which its first
// op creates, so that a server needs no wipe between sequences. Ops use a
// small alphabet of paths under it so that they collide often: creates
// (persistent, ephemeral, sequential under <root>/s-), deletes and sets
// with right, wrong and any (-1) versions, reads with and without watches,
// multis with check ops, sync, and rarely a request around the server's
// packet limit (jute.maxbuffer). Each op runs on one of the sessions.
package difftest

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/zkflow/zkflow/task"
)

// MaxPacketSize is ZooKeeper's default jute.maxbuffer, the packet limit
// both sides are expected to enforce.
const MaxPacketSize = 0xfffff

// Op is one step of a sequence: Req on session Session.
type Op struct {
	Session int
	Req     task.Request
}

func (o Op) String() string {
	return fmt.Sprintf("s%d %s", o.Session, describe(o.Req))
}

func describe(req task.Request) string {
	switch r := req.(type) {
	case *task.CreateRequest:
		return fmt.Sprintf("create %s %s data=%s", r.Path, r.Mode, short(r.Data))
	case *task.DeleteRequest:
		return fmt.Sprintf("delete %s v=%d", r.Path, r.Version)
	case *task.SetDataRequest:
		return fmt.Sprintf("set %s v=%d data=%s", r.Path, r.Version, short(r.Data))
	case *task.CheckRequest:
		return fmt.Sprintf("check %s v=%d", r.Path, r.Version)
	case *task.ExistsRequest:
		return fmt.Sprintf("exists %s watch=%v", r.Path, r.Watch)
	case *task.GetDataRequest:
		return fmt.Sprintf("get %s watch=%v", r.Path, r.Watch)
	case *task.GetChildrenRequest:
		return fmt.Sprintf("children %s watch=%v", r.Path, r.Watch)
	case *task.SyncRequest:
		return fmt.Sprintf("sync %s", r.Path)
	case *task.MultiRequest:
		parts := make([]string, len(r.Ops))
		for i, op := range r.Ops {
			parts[i] = describe(op)
		}
		return "multi[" + strings.Join(parts, "; ") + "]"
	}
	return fmt.Sprintf("%T", req)
}

func short(b []byte) string {
	if len(b) > 16 {
		return fmt.Sprintf("<%d bytes>", len(b))
	}
	return fmt.Sprintf("%q", b)
}

// Root is the top-level node of the sequence with this seed.
func Root(seed uint64) string { return fmt.Sprintf("/d%d", seed) }

// Generate returns the sequence for seed: n ops (after the one that
// creates the root) spread over sessions sessions.
func Generate(seed uint64, n, sessions int) []Op {
	g := &gen{rnd: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), root: Root(seed), sessions: sessions}
	ops := []Op{{Session: 0, Req: &task.CreateRequest{Path: g.root, ACL: task.OpenACL}}}
	for range n {
		ops = append(ops, Op{Session: g.rnd.IntN(sessions), Req: g.request()})
	}
	return ops
}

type gen struct {
	rnd      *rand.Rand
	root     string
	sessions int
}

// paths under the root; "" is the root itself, /c/z has a missing parent.
var rels = []string{"", "/a", "/a", "/b", "/b", "/a/x", "/a/y", "/b/x", "/a/x/q", "/c/z"}

func (g *gen) path() string { return g.root + rels[g.rnd.IntN(len(rels))] }

// createPath is a path for a create: sequential modes use <root>/s- or
// <root>/a/s- sometimes.
func (g *gen) createPath(mode task.CreateMode) string {
	if mode.IsSequential() && g.rnd.IntN(3) > 0 {
		if g.rnd.IntN(2) == 0 {
			return g.root + "/s-"
		}
		return g.root + "/a/s-"
	}
	return g.path()
}

var datas = [][]byte{nil, []byte("x"), []byte("yy"), []byte("zzz")}

func (g *gen) data() []byte { return datas[g.rnd.IntN(len(datas))] }

func (g *gen) version() int32 {
	// -1 often, small versions (often right) otherwise.
	if g.rnd.IntN(4) == 0 {
		return task.AnyVersion
	}
	return int32(g.rnd.IntN(3))
}

var modes = []task.CreateMode{task.Persistent, task.Persistent, task.Ephemeral, task.PersistentSequential, task.EphemeralSequential}

func (g *gen) create() *task.CreateRequest {
	m := modes[g.rnd.IntN(len(modes))]
	return &task.CreateRequest{Path: g.createPath(m), Data: g.data(), Mode: m, ACL: task.OpenACL}
}

func (g *gen) multiOp() task.MultiOp {
	switch g.rnd.IntN(4) {
	case 0:
		return g.create()
	case 1:
		return &task.DeleteRequest{Path: g.path(), Version: g.version()}
	case 2:
		return &task.SetDataRequest{Path: g.path(), Data: g.data(), Version: g.version()}
	default:
		return &task.CheckRequest{Path: g.path(), Version: g.version()}
	}
}

func (g *gen) request() task.Request {
	switch k := g.rnd.IntN(100); {
	case k < 20:
		return g.create()
	case k < 30:
		return &task.DeleteRequest{Path: g.path(), Version: g.version()}
	case k < 42:
		return &task.SetDataRequest{Path: g.path(), Data: g.data(), Version: g.version()}
	case k < 54:
		return &task.ExistsRequest{Path: g.path(), Watch: g.rnd.IntN(2) == 0}
	case k < 66:
		return &task.GetDataRequest{Path: g.path(), Watch: g.rnd.IntN(2) == 0}
	case k < 78:
		return &task.GetChildrenRequest{Path: g.path(), Watch: g.rnd.IntN(2) == 0}
	case k < 83:
		// No standalone check: zkadapter's sender panics on one (its
		// prepare has no case for *task.CheckRequest outside a multi).
		return &task.SyncRequest{Path: g.path()}
	case k < 99:
		ops := make([]task.MultiOp, 1+g.rnd.IntN(3))
		for i := range ops {
			ops[i] = g.multiOp()
		}
		return &task.MultiRequest{Ops: ops}
	default:
		return g.big()
	}
}

// big is a set or create whose wire size is just over the packet limit
// (never sent: both sides must reject it with ErrDataTooLarge) or, rarely,
// comfortably under it (sent: the server stores about 1 MB).
func (g *gen) big() task.Request {
	p := g.root + "/a"
	over := g.rnd.IntN(8) > 0
	// set: header 8, path 4+len, data 4+n, version 4.
	n := MaxPacketSize - (8 + 4 + len(p) + 4 + 4)
	if over {
		n++
	} else {
		n -= 4096
	}
	if g.rnd.IntN(2) == 0 {
		return &task.SetDataRequest{Path: p, Data: make([]byte, n), Version: task.AnyVersion}
	}
	// create: path, data, acl count and one entry, flags (no version): 27 more than a set.
	acl := 4 + 4 + 4 + len("world") + 4 + len("anyone")
	return &task.CreateRequest{Path: p, Data: make([]byte, n-acl), ACL: task.OpenACL}
}
