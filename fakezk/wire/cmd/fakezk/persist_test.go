package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// What a client wrote and was told, to compare after a restart.
type written struct {
	data map[string][]byte
	stat map[string]*gozk.Stat
	acl  map[string][]gozk.ACL
	zxid int64 // the highest zxid a reply carried (a Stat's mzxid or pzxid)
}

// Every write acknowledged to a client survives a SIGKILL: after a restart
// on the same dataDir the data, ACLs and every Stat field are as the
// client last saw them, sequential names continue from the parent's
// cversion, the zxid has not gone back, and the ephemerals of the sessions
// the crash ended are gone (sessions are not kept).
func TestKillRestartKeepsAcknowledgedWrites(t *testing.T) {
	data := t.TempDir()
	bin := filepath.Join(binDir, "fakezk")
	p := startProc(t, nil, bin, "-port", "0", "-tick", "200ms", "-data", data)
	c := dial(t, p.addr)
	w := written{data: map[string][]byte{}, stat: map[string]*gozk.Stat{}, acl: map[string][]gozk.ACL{}}
	open := gozk.WorldACL(gozk.PermAll)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.Create("/app", []byte("v0"), 0, open)
	must(err)
	var seq []string
	for i := 0; i < 3; i++ {
		name, err := c.Create("/app/job-", []byte(fmt.Sprint(i)), gozk.FlagSequence, open)
		must(err)
		seq = append(seq, name)
	}
	must(c.Delete(seq[1], -1)) // cversion counts creates: the next name is still -3
	_, err = c.Create("/app/eph", nil, gozk.FlagEphemeral, open)
	must(err)
	for i := 0; i < 5; i++ {
		_, err = c.Set("/app", []byte(fmt.Sprintf("v%d", i+1)), -1)
		must(err)
	}
	secret := gozk.DigestACL(gozk.PermAll, "user", "pw")
	_, err = c.Create("/secret", []byte("s"), 0, secret)
	must(err)
	_, err = c.Multi(&gozk.CreateRequest{Path: "/m", Data: []byte("multi"), Acl: open},
		&gozk.SetDataRequest{Path: "/m", Data: []byte("multi2"), Version: 0})
	must(err)
	big := make([]byte, 500_000)
	for i := range big {
		big[i] = byte(i)
	}
	_, err = c.Create("/big", big, 0, open)
	must(err)
	// The last write: its reply is the last thing the client hears
	// before the kill.
	_, err = c.Set("/app/job-0000000000", []byte("last"), 0)
	must(err)
	for _, path := range []string{"/", "/app", seq[0], seq[2], "/m", "/big"} {
		d, st, err := c.Get(path)
		must(err)
		w.data[path], w.stat[path] = d, st
		w.zxid = max(w.zxid, st.Mzxid, st.Pzxid)
		acl, _, err := c.GetACL(path)
		must(err)
		w.acl[path] = acl
	}
	_, st, err := c.Exists("/secret")
	must(err)
	w.stat["/secret"] = st
	c.Close()
	p.kill()

	p2 := startProc(t, nil, bin, "-port", "0", "-tick", "200ms", "-data", data)
	c2 := dial(t, p2.addr)
	for path, want := range w.data {
		d, st, err := c2.Get(path)
		must(err)
		if string(d) != string(want) {
			t.Errorf("%s: data %.20q after restart, want %.20q", path, d, want)
		}
		gotStat, wantStat := *st, *w.stat[path]
		if path == "/app" {
			// The ephemeral went at the restart, in a transaction of
			// its own: numChildren one less, pzxid of that transaction.
			if gotStat.NumChildren != wantStat.NumChildren-1 || gotStat.Pzxid <= w.zxid {
				t.Errorf("/app after the ephemeral went: %+v (before %+v)", gotStat, wantStat)
			}
			gotStat.NumChildren, gotStat.Pzxid, gotStat.Cversion = wantStat.NumChildren, wantStat.Pzxid, wantStat.Cversion
		}
		if gotStat != wantStat {
			t.Errorf("%s: stat after restart\n%+v, want\n%+v", path, gotStat, wantStat)
		}
		acl, _, err := c2.GetACL(path)
		must(err)
		if fmt.Sprint(acl) != fmt.Sprint(w.acl[path]) {
			t.Errorf("%s: ACL %v, want %v", path, acl, w.acl[path])
		}
	}
	if _, _, err := c2.Get("/secret"); !errors.Is(err, gozk.ErrNoAuth) {
		t.Errorf("get /secret without credentials after restart: %v, want ErrNoAuth (the ACL kept)", err)
	}
	if ok, _, err := c2.Exists("/app/eph"); err != nil || ok {
		t.Errorf("ephemeral /app/eph after restart: exists=%v err=%v, want gone", ok, err)
	}
	name, err := c2.Create("/app/job-", nil, gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
	must(err)
	if name != "/app/job-0000000004" {
		t.Errorf("sequential create after restart: %s, want /app/job-0000000004 (creates 0-3 before)", name)
	}
	_, st, err = c2.Get("/app")
	must(err)
	if st.Pzxid <= w.zxid {
		t.Errorf("zxid went back: a new write has pzxid %#x, the client saw %#x", st.Pzxid, w.zxid)
	}
}

// A log whose last record the crash tore (the file cut mid-record) is
// served from the records before it; a record damaged before the end, or
// a damaged snapshot, stops the start with exit status 2 and an error
// naming the file.
func TestTornAndCorruptDataDir(t *testing.T) {
	bin := filepath.Join(binDir, "fakezk")
	data := t.TempDir()
	p := startProc(t, nil, bin, "-port", "0", "-data", data)
	c := dial(t, p.addr)
	for i := 0; i < 3; i++ {
		if _, err := c.Create(fmt.Sprintf("/n%d", i), []byte("x"), 0, gozk.WorldACL(gozk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	p.kill()
	logPath := filepath.Join(data, storeDir, "log")
	whole, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	// Cut the last record (the session's close) and half of the one
	// before (the create of /n2).
	offs := recordOffsets(t, whole)
	cut := offs[len(offs)-2] + 10
	if err := os.WriteFile(logPath, whole[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	p2 := startProc(t, nil, bin, "-port", "0", "-data", data)
	if !strings.Contains(p2.output(), "torn last record") {
		t.Errorf("no word of the torn record in the log:\n%s", p2.output())
	}
	c2 := dial(t, p2.addr)
	for path, want := range map[string]bool{"/n0": true, "/n1": true, "/n2": false} {
		if ok, _, err := c2.Exists(path); err != nil || ok != want {
			t.Errorf("%s after a torn log: exists=%v err=%v, want %v", path, ok, err, want)
		}
	}
	c2.Close()
	p2.cmd.Process.Signal(syscall.SIGTERM)
	if err := p2.wait(t); err != nil {
		t.Fatalf("SIGTERM: exit %v, want 0", err)
	}

	// Damage in the middle of the log: a flipped byte in the first
	// record's payload.
	whole, err = os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(recordOffsets(t, whole)) < 2 {
		t.Fatal("log too short to damage its middle")
	}
	bad := append([]byte(nil), whole...)
	bad[len(logMagic)+12] ^= 0xff
	if err := os.WriteFile(logPath, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	refused(t, bin, data, "corrupt dataDir", "log")
	if err := os.WriteFile(logPath, whole, 0o644); err != nil {
		t.Fatal(err)
	}
	snapPath := filepath.Join(data, storeDir, "snapshot")
	if err := os.WriteFile(snapPath, []byte("not a snapshot"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused(t, bin, data, "corrupt dataDir", "snapshot")
}

// refused runs the command on data and expects exit status 2 with an
// error that says each of words.
func refused(t *testing.T, bin, data string, words ...string) {
	t.Helper()
	out, err := execOut(bin, "-port", "0", "-data", data)
	var ee interface{ ExitCode() int }
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("start on a damaged dataDir: %v, want exit status 2\n%s", err, out)
	}
	for _, w := range words {
		if !strings.Contains(out, w) {
			t.Errorf("error does not say %q:\n%s", w, out)
		}
	}
}

// recordOffsets returns where each record of a log starts.
func recordOffsets(t *testing.T, log []byte) []int {
	t.Helper()
	var offs []int
	for off := len(logMagic); off < len(log); {
		_, next, ok := record(log, off)
		if !ok {
			t.Fatalf("log damaged at %d", off)
		}
		offs = append(offs, off)
		off = next
	}
	return offs
}

// SIGTERM and SIGINT stop the server, a client connected: its listener
// is closed and it exits 0.
func TestSignalsExitZero(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		p := startProc(t, nil, filepath.Join(binDir, "fakezk"), "-port", "0", "-data", t.TempDir())
		c := dial(t, p.addr)
		p.cmd.Process.Signal(sig)
		if err := p.wait(t); err != nil {
			t.Fatalf("%v: exit %v, want 0\n%s", sig, err, p.output())
		}
		c.Close()
		if c, err := net.Dial("tcp", p.addr); err == nil {
			c.Close()
			t.Fatalf("%v: %s still accepts connections", sig, p.addr)
		}
	}
}

// A client connected through a crash and a restart on the same port and
// dataDir comes back: the server's zxid is not below the last the client
// saw (else the server would refuse it at the handshake), its session is
// reported expired (sessions are not kept), and its new session reads
// what it wrote.
func TestClientFollowsRestart(t *testing.T) {
	data := t.TempDir()
	bin := filepath.Join(binDir, "fakezk")
	p := startProc(t, nil, bin, "-port", "0", "-tick", "200ms", "-data", data)
	c, events, err := gozk.Connect([]string{p.addr}, 2*time.Second, gozk.WithLogger(quiet{}), gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, events, gozk.StateHasSession)
	first := c.SessionID()
	for i := 0; i < 20; i++ {
		if _, err := c.Create(fmt.Sprintf("/w%d", i), []byte("x"), 0, gozk.WorldACL(gozk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	// The last reply the client hears before the crash is a failed
	// write's: a zxid that changed no node.
	if _, err := c.Create("/w0", nil, 0, gozk.WorldACL(gozk.PermAll)); err != gozk.ErrNodeExists {
		t.Fatalf("create of an existing node: %v", err)
	}
	p.kill()
	port := p.addr[strings.LastIndex(p.addr, ":")+1:]
	startProc(t, nil, bin, "-port", port, "-tick", "200ms", "-data", data)
	waitFor(t, events, gozk.StateExpired)
	waitFor(t, events, gozk.StateHasSession)
	if c.SessionID() == first {
		t.Fatalf("session %#x resumed after a restart: sessions are not kept", first)
	}
	if d, _, err := c.Get("/w19"); err != nil || string(d) != "x" {
		t.Fatalf("get after restart: %q %v", d, err)
	}
}

// waitFor waits, at most 20s, for the client to report st.
func waitFor(t *testing.T, events <-chan gozk.Event, st gozk.State) {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case ev := <-events:
			if ev.Type == gozk.EventSession && ev.State == st {
				return
			}
		case <-timeout.C:
			t.Fatalf("no %v within 20s", st)
		}
	}
}

// A second server on a dataDir in use is refused (exit status 2, the
// error says so); once the first is killed, its lock goes with it.
func TestDataDirInUse(t *testing.T) {
	bin := filepath.Join(binDir, "fakezk")
	data := t.TempDir()
	p := startProc(t, nil, bin, "-port", "0", "-data", data)
	refused(t, bin, data, "in use")
	p.kill()
	startProc(t, nil, bin, "-port", "0", "-data", data)
}
