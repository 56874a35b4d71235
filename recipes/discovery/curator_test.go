package discovery_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkflow/zkflow/internal/interop"
	"github.com/zkflow/zkflow/internal/peers"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// curatorPeer drives the Curator discovery program
// (bench/peers/curator/DiscoveryInterop.java): one command, one answer.
type curatorPeer struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startCuratorPeer(t *testing.T, ctx context.Context, server, base string) *curatorPeer {
	t.Helper()
	prog, err := peers.BuildCurator(peers.DefaultCacheDir())
	if errors.Is(err, peers.ErrUnavailable) && os.Getenv("ZK_REQUIRED") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	argv := append(prog.Main("DiscoveryInterop"), "--server", server, "--base", base, "--session-timeout-ms", "2000")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &curatorPeer{t: t, cmd: cmd, in: in, lines: make(chan string, 1)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Process.Kill()
		for range p.lines {
		}
		_ = cmd.Wait()
	})
	if l := p.read(ctx); l != "ready" {
		t.Fatalf("curator peer: %q", l)
	}
	return p
}

func (p *curatorPeer) read(ctx context.Context) string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatal("curator peer exited")
		}
		return l
	case <-ctx.Done():
		p.t.Fatal("curator peer: no answer")
		return ""
	}
}

// do sends a command and returns the answer after "ok".
func (p *curatorPeer) do(ctx context.Context, format string, args ...any) string {
	p.t.Helper()
	cmd := fmt.Sprintf(format, args...)
	if _, err := fmt.Fprintln(p.in, cmd); err != nil {
		p.t.Fatal(err)
	}
	l := p.read(ctx)
	if l != "ok" && !strings.HasPrefix(l, "ok ") {
		p.t.Fatalf("curator peer: %s: %s", cmd, l)
	}
	return strings.TrimPrefix(strings.TrimPrefix(l, "ok"), " ")
}

// curatorSeen is an instance as the Curator program describes it.
type curatorSeen struct {
	ID          string
	Address     string
	Port        int
	Enabled     bool
	ServiceType string
	Payload     map[string]string
	PayloadType string
	URI         string
}

func (p *curatorPeer) instances(ctx context.Context, cmd, name string) []curatorSeen {
	p.t.Helper()
	var out []curatorSeen
	if err := json.Unmarshal([]byte(p.do(ctx, "%s %s", cmd, name)), &out); err != nil {
		p.t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b curatorSeen) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// cacheWatch follows a cache through Next, which answers the difference
// from what it answered last.
type cacheWatch struct {
	c    *discovery.ServiceCache
	last []string // what Next returned last
	read bool     // Next has returned
}

// await waits until Next answers the instance ids want.
func (w *cacheWatch) await(t *testing.T, ctx context.Context, want ...string) {
	t.Helper()
	for !w.read || !slices.Equal(w.last, want) {
		n, err := w.c.Next(ctx)
		if err != nil {
			t.Fatalf("cache has %v, want %v: %v", w.last, want, err)
		}
		w.last, w.read = ids(n), true
	}
}

// Curator's ServiceDiscovery (Debian's curator-x-discovery 5.4, driven by
// the peer program) and this recipe on one base path of a server (real
// and fakezk on the wire: interop.Run): each finds the other's instances, once (query) and through caches and
// providers, with the payloads as written; an instance unregistered, or
// whose session ends (expired or closed on our side, expired on Curator's
// after its process halts), disappears on both sides, and ours is
// registered again on its new session after the expiry.
func TestCuratorInterop(t *testing.T) {
	// Our registering client reaches the server through a proxy that
	// Partition cuts (to expire its session); the others dial it directly.
	interop.Run(t, zkserver.Options{Proxied: true}, curatorInterop)
}

func curatorInterop(t *testing.T, srv interop.Server) {
	direct := []string{srv.DirectAddr(0)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const base = "/disc-interop/services"
	cur := startCuratorPeer(t, ctx, direct[0], base)

	reg := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{LogDetached: true, SessionTimeout: time.Second})
	ours, _ := discovery.NewClient(reg.Ex, base)
	look, _ := discovery.NewClient(realtest.Dial(t, ctx, direct, realtest.Options{LogDetached: true}).Ex, base)

	// Curator registers; we read its node as it wrote it.
	var written discovery.Instance
	if err := json.Unmarshal([]byte(cur.do(ctx, "register web j1 10.0.0.1 8001 alpha")), &written); err != nil {
		t.Fatal(err)
	}
	if written.PayloadClass != "java.util.HashMap" || written.Disabled || written.ServiceType != discovery.Dynamic || written.RegistrationTimeUTC == 0 {
		t.Fatalf("curator wrote %+v", written)
	}

	// We register two: one with the payload's Java class, one without.
	spec := &discovery.URISpec{Parts: []discovery.URIPart{{Value: "scheme", Variable: true}, {Value: "://"}, {Value: "address", Variable: true}, {Value: ":"}, {Value: "port", Variable: true}}}
	g1, err := ours.Register(ctx, discovery.Instance{Name: "web", ID: "g1", Address: "10.0.0.2", Port: 8002,
		Payload: json.RawMessage(`{"val":"beta"}`), PayloadClass: "java.util.HashMap", URISpec: spec})
	if err != nil {
		t.Fatal(err)
	}
	g2, err := ours.Register(ctx, discovery.Instance{Name: "web", ID: "g2", Address: "10.0.0.3", Port: 8003,
		Payload: json.RawMessage(`{"val":"gamma"}`), URISpec: spec})
	if err != nil {
		t.Fatal(err)
	}

	// One-off queries, both ways.
	ins, err := look.Query(ctx, "web")
	if err != nil || !slices.Equal(ids(ins), []string{"g1", "g2", "j1"}) {
		t.Fatalf("our query = %v, %v", ids(ins), err)
	}
	if p, err := discovery.Payload[map[string]string](ins[2]); err != nil || p["val"] != "alpha" || ins[2].Address != "10.0.0.1" || ins[2].Port != 8001 {
		t.Fatalf("curator's instance read as %+v (payload %v, %v)", ins[2], p, err)
	}
	seen := cur.instances(ctx, "query", "web")
	if len(seen) != 3 || seen[0].ID != "g1" || seen[1].ID != "g2" {
		t.Fatalf("curator's query = %+v", seen)
	}
	for i, want := range []struct{ val, typ, uri string }{
		{"beta", "java.util.HashMap", "http://10.0.0.2:8002"},
		{"gamma", "java.util.LinkedHashMap", "http://10.0.0.3:8003"}, // no class: Jackson's default for Object
	} {
		if s := seen[i]; s.Payload["val"] != want.val || s.PayloadType != want.typ || !s.Enabled || s.ServiceType != "DYNAMIC" || s.URI != want.uri {
			t.Fatalf("curator reads %s as %+v, want payload %s of %s, uri %s", s.ID, s, want.val, want.typ, want.uri)
		}
	}

	// Caches and providers, both ways.
	cc, err := look.StartCache(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop(ctx)
	cw := &cacheWatch{c: cc}
	cur.do(ctx, "cache web")
	cur.do(ctx, "await web g1,g2,j1")
	cw.await(t, ctx, "g1", "g2", "j1")
	prov, _ := cc.Provider()
	got := map[string]bool{}
	for range 3 {
		in, err := prov.Get()
		if err != nil {
			t.Fatal(err)
		}
		got[in.ID] = true
	}
	if len(got) != 3 {
		t.Fatalf("our round-robin provider gave %v", got)
	}
	if id := cur.do(ctx, "get web"); id != "g1" && id != "g2" && id != "j1" {
		t.Fatalf("curator's provider gave %q", id)
	}

	// Unregistered on either side: gone on both.
	cur.do(ctx, "unregister web j1")
	cw.await(t, ctx, "g1", "g2")
	if err := ours.Unregister(ctx, g1); err != nil {
		t.Fatal(err)
	}
	cur.do(ctx, "await web g2")
	if seen := cur.instances(ctx, "query", "web"); len(seen) != 1 || seen[0].ID != "g2" {
		t.Fatalf("curator's query after unregisters = %+v", seen)
	}

	// Our registrant's session expires (cut off past its timeout): g2
	// disappears on both sides; once the registrant is back, it learns of
	// the expiry and registers g2 again on its new session, seen on both
	// sides.
	srv.Partition(0)
	cur.do(ctx, "await web -")
	cw.await(t, ctx)
	srv.Heal(0)
	cur.do(ctx, "await web g2")
	cw.await(t, ctx, "g2")
	// Listed on both sides once its create is applied; Registered once
	// the registrant's keeper has read the node back on its new session,
	// a round trip later: waited for within ctx's bound.
	for !g2.Registered() {
		if ctx.Err() != nil {
			t.Fatal("g2 listed again but never registered on its new session")
		}
		runtime.Gosched()
	}

	// Sessions that end: ours closed (g2 goes with it); Curator's process
	// halts with j2 registered, and its session expires.
	reg.Stop()
	cur.do(ctx, "await web -")
	cw.await(t, ctx)
	cur.do(ctx, "register web j2 10.0.0.4 8004 delta")
	cw.await(t, ctx, "j2")
	fmt.Fprintln(cur.in, "halt")
	cw.await(t, ctx) // once the server expires the halted process's session
	if ins, err := look.Query(ctx, "web"); err != nil || len(ins) != 0 {
		t.Fatalf("our query after every session ended = %v, %v", ids(ins), err)
	}
}
