package partition_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/interop"
	"github.com/zkflow/zkflow/internal/realtest"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// kazooPeer is a running testdata/kazoo_partition.py: kazoo
// SetPartitioner members, one session each, stopped by closing stdin.
type kazooPeer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func startKazoo(t *testing.T, ctx context.Context, server, path, log string, ids ...string) *kazooPeer {
	t.Helper()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", "testdata/kazoo_partition.py", "--server", server, "--path", path,
		"--items", strings.Join(kzItems, ","), "--ids", strings.Join(ids, ","), "--log", log, "--time-boundary", "0.3", "--reaction", "0.3", "--linger", fmt.Sprint(linger.Seconds()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k := &kazooPeer{cmd: cmd, stdin: stdin, out: out}
	t.Cleanup(func() { _ = k.stop() })
	return k
}

// stop ends the members (each writes its exits and finishes) and waits.
func (k *kazooPeer) stop() error {
	if k.stdin == nil {
		return nil
	}
	_ = k.stdin.Close()
	k.stdin = nil
	if err := k.cmd.Wait(); err != nil {
		return fmt.Errorf("kazoo peer: %v; output:\n%s", err, k.out.String())
	}
	return nil
}

// linger is how long a holder on either side keeps an item after it has
// decided to give it up (Drain; kazoo's side before release_set), so
// that the new owner tries to take it meanwhile: only a lock both sides
// see keeps it waiting.
const linger = 500 * time.Millisecond

var kzItems = []string{"i0", "i1", "i2", "i3", "i4", "i5", "i6"}

// logEntry is one entry of an item's hold log: <side>-<identifier>-<kind>-<seq>.
type logEntry struct {
	who, kind string
	seq       string
}

func readLog(t *testing.T, ctx context.Context, ex *executor.Executor, dir string) []logEntry {
	t.Helper()
	cl, err := executor.Await(ctx, ex, task.Children(dir))
	if err != nil {
		t.Fatal(err)
	}
	var es []logEntry
	for _, n := range cl.Names {
		parts := strings.Split(n, "-")
		if len(parts) != 4 {
			t.Fatalf("log %s: entry %q", dir, n)
		}
		es = append(es, logEntry{who: parts[1], kind: parts[2], seq: parts[3]})
	}
	slices.SortFunc(es, func(a, b logEntry) int { return strings.Compare(a.seq, b.seq) })
	return es
}

// alternate checks that an item's log alternates enter and exit of one
// member, and returns the last holder (or "").
func alternate(item string, es []logEntry) (string, error) {
	holder := ""
	for _, e := range es {
		switch {
		case e.kind == "enter" && holder != "":
			return "", fmt.Errorf("item %s: %s entered while %s held it: log %v", item, e.who, holder, es)
		case e.kind == "enter":
			holder = e.who
		case e.kind == "exit" && e.who != holder:
			return "", fmt.Errorf("item %s: %s exited while %q held it: log %v", item, e.who, holder, es)
		default:
			holder = ""
		}
	}
	return holder, nil
}

// A kazoo SetPartitioner (Debian's python3-kazoo, in a Python process)
// and this package's members partition one set on one path of a server,
// real and fakezk on the wire (interop.Run): they see each other in the
// party, take items under one lock protocol, and never hold one item at
// once. Every hold, on either side,
// logs an enter when it begins and an exit before its lock is released
// (ours through the hold's fence, in OnChange and Drain); each item's
// log must alternate enter and exit of one member. After each change of
// the party (kazoo and Go members joining, a Go member leaving, the kazoo
// process stopping), once the party is stable every item's log ends with
// an enter by the member KazooAssign names: together they cover the set,
// as kazoo's own function divides it. Holders linger before they give an
// item up, so each handover has the new owner trying the lock while the
// old one holds it: with lock nodes kazoo's Lock does not count (another
// name than <prefix>__lock__<seq>), the logs show two holders at once.
func TestKazooInterop(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import kazoo.recipe.partitioner").Run(); err != nil {
		if os.Getenv("ZK_REQUIRED") == "1" {
			t.Fatalf("python3-kazoo is not installed (make deps installs it): %v", err)
		}
		t.Skipf("python3-kazoo is not installed (make deps installs it): %v", err)
	}
	interop.Run(t, zkserver.Options{}, kazooInterop)
}

func kazooInterop(t *testing.T, srv interop.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const path, logDir = "/kz-part", "/kz-log"
	admin := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{}).Ex
	for _, it := range kzItems {
		for _, p := range []string{logDir, logDir + "/" + it, path, path + "/party"} {
			if _, err := executor.Await(ctx, admin, task.Create(p, nil, task.Persistent)); err != nil && !strings.Contains(err.Error(), "exists") {
				t.Fatal(err)
			}
		}
	}
	entry := func(h partition.Hold, id, kind string) task.Task[task.Unit] {
		op := &task.CreateRequest{Path: fmt.Sprintf("%s/%s/go-%s-%s-", logDir, h.Item, id, kind), Mode: task.PersistentSequential}
		return c.Map(h.Fenced(op), func([]task.MultiResult) task.Unit { return task.Unit{} })
	}
	var errMu sync.Mutex
	var werrs []error
	goMember := func(id string) (*partition.Member, *executor.Executor) {
		ex := realtest.Dial(t, ctx, srv.Addrs(), realtest.Options{}).Ex
		p, err := partition.New(path, kzItems, partition.WithStable(300*time.Millisecond),
			partition.WithDrain(func(h partition.Hold) task.Task[task.Unit] { return c.Seq(c.Sleep(linger), entry(h, id, "exit")) }))
		if err != nil {
			t.Fatal(err)
		}
		on := func(ch partition.Change) {
			for _, h := range ch.Held {
				if slices.Contains(ch.Acquired, h.Item) {
					executor.Submit(ex, entry(h, id, "enter"), func(_ task.Unit, err error) {
						if err != nil {
							errMu.Lock()
							werrs = append(werrs, fmt.Errorf("%s: enter %s: %w", id, h.Item, err))
							errMu.Unlock()
						}
					})
				}
			}
		}
		m, err := executor.Await(ctx, ex, p.Join(id, on))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = executor.Await(context.Background(), ex, m.Leave()) })
		return m, ex
	}
	// covered waits until the party is what want lists and every item's
	// log ends with an enter by the member KazooAssign gives it.
	covered := func(phase string, want ...string) {
		t.Helper()
		slices.Sort(want)
		deadline := time.Now().Add(90 * time.Second)
		for {
			var last []string
			cl, err := executor.Await(ctx, admin, task.Children(path+"/party"))
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, n := range cl.Names {
				ids = append(ids, n[strings.IndexByte(n, '-')+1:])
			}
			slices.Sort(ids)
			ok := slices.Equal(ids, want)
			for _, it := range kzItems {
				es := readLog(t, ctx, admin, logDir+"/"+it)
				if _, err := alternate(it, es); err != nil {
					t.Fatalf("%s: %v", phase, err)
				}
				owner := ""
				for _, id := range want {
					if slices.Contains(partition.KazooAssign(id, want, kzItems), it) {
						owner = id
					}
				}
				if len(es) == 0 || es[len(es)-1].kind != "enter" || es[len(es)-1].who != owner {
					ok = false
				}
				if len(es) > 0 {
					last = append(last, it+":"+es[len(es)-1].who+"-"+es[len(es)-1].kind)
				}
			}
			if ok {
				t.Logf("%s: party %v, last entries %v", phase, ids, last)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not covered after 90s: party %v (want %v), last entries %v", phase, ids, want, last)
			}
			time.Sleep(200 * time.Millisecond) // polling a real server
		}
	}

	kz := startKazoo(t, ctx, srv.Addrs()[0], path, logDir, "k0", "k1")
	goMember("g0")
	g1, g1ex := goMember("g1")
	covered("two Go and two kazoo members", "g0", "g1", "k0", "k1")

	if _, err := executor.Await(ctx, g1ex, g1.Leave()); err != nil {
		t.Fatal(err)
	}
	covered("a Go member left", "g0", "k0", "k1")

	if err := kz.stop(); err != nil {
		t.Fatal(err)
	}
	covered("the kazoo members finished", "g0")

	kz2 := startKazoo(t, ctx, srv.Addrs()[0], path, logDir, "k2")
	goMember("g3")
	covered("a kazoo and a Go member joined", "g0", "g3", "k2")
	if err := kz2.stop(); err != nil {
		t.Fatal(err)
	}
	covered("the kazoo member finished", "g0", "g3")

	// Every item's log alternates enter and exit of one member.
	sides := map[string]bool{}
	moved := 0
	for _, it := range kzItems {
		es := readLog(t, ctx, admin, logDir+"/"+it)
		if _, err := alternate(it, es); err != nil {
			t.Fatal(err)
		}
		whos := map[string]bool{}
		for _, e := range es {
			whos[e.who[:1]] = true
			sides[e.who[:1]] = true
		}
		if len(whos) == 2 {
			moved++
		}
	}
	errMu.Lock()
	defer errMu.Unlock()
	for _, err := range werrs {
		t.Error(err)
	}
	if !sides["g"] || !sides["k"] || moved == 0 {
		t.Fatalf("sides that held: %v, items held by both sides in turn: %d: the two did not share the set", sides, moved)
	}
	t.Logf("%d of %d items held by Go and kazoo members in turn", moved, len(kzItems))
}
