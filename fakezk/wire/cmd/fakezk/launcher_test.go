package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// go-zookeeper's harness starts "zkServer.sh start-foreground zoo.cfg"
// with the super user's digest and TTL nodes as JVM flags, and stops it
// with SIGKILL: the launcher hands the flags to the command and execs it,
// so the kill stops the server.
func TestLauncherForeground(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte("dataDir="+dir+"\nclientPort=0\ntickTime=200\nadmin.enableServer=false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"SERVER_JVMFLAGS=-Dzookeeper.DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU= " +
		"-Dzookeeper.extendedTypesEnabled=true -Dzookeeper.emulate353TTLNodes=true -Xmx512m"}
	p := startProc(t, env, filepath.Join(binDir, "zkServer.sh"), "start-foreground", cfg)
	c := dial(t, p.addr)
	if _, err := c.CreateTTL("/ttl", nil, gozk.FlagTTL, gozk.WorldACL(gozk.PermAll), time.Hour); err != nil {
		t.Errorf("TTL create with -Dzookeeper.extendedTypesEnabled=true: %v", err)
	}
	if _, err := c.Create("/mine", []byte("x"), 0, gozk.DigestACL(gozk.PermAll, "u", "p")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get("/mine"); err != gozk.ErrNoAuth {
		t.Fatalf("get without credentials: %v, want ErrNoAuth", err)
	}
	if err := c.AddAuth("digest", []byte("super:test")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get("/mine"); err != nil {
		t.Errorf("get as the super user of -D...superDigest: %v", err)
	}
	c.Close()
	p.kill()
	if conn, err := net.Dial("tcp", p.addr); err == nil {
		conn.Close()
		t.Fatal("SIGKILL to zkServer.sh left the server serving")
	}
}

// start runs the server in the background with its pid in dataDir, as
// ZooKeeper's script does; status reports it; stop ends it with SIGTERM.
func TestLauncherStartStop(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte("dataDir = "+dir+"\nclientPort=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(binDir, "zkServer.sh")
	pidFile := filepath.Join(dir, "zookeeper_server.pid")
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			exec.Command(script, "stop", cfg).Run()
		}
	})
	if out, err := exec.Command(script, "start", cfg).CombinedOutput(); err != nil || !strings.Contains(string(out), "STARTED") {
		t.Fatalf("start: %v\n%s", err, out)
	}
	if _, err := os.Stat(pidFile); err != nil {
		t.Fatalf("no pid file: %v", err)
	}
	if out, err := exec.Command(script, "status", cfg).CombinedOutput(); err != nil || !strings.Contains(string(out), "Mode: standalone") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	addr := boundAddr(t, filepath.Join(dir, "zookeeper-fakezk.out"))
	dial(t, addr).Close()
	out, err := exec.Command(script, "stop", cfg).CombinedOutput()
	stopped = true
	if err != nil || !strings.Contains(string(out), "STOPPED") {
		t.Fatalf("stop: %v\n%s", err, out)
	}
	if _, err := os.Stat(pidFile); err == nil {
		t.Error("pid file left after stop")
	}
	if err := exec.Command(script, "status", cfg).Run(); err == nil {
		t.Error("status after stop: exit 0, want 1")
	}
	if conn, err := net.Dial("tcp", addr); err == nil {
		conn.Close()
		t.Error("still serving after stop")
	}
	log, _ := os.ReadFile(filepath.Join(dir, "zookeeper-fakezk.out"))
	if !strings.Contains(string(log), "shutting down") {
		t.Errorf("stop was not a SIGTERM the server heard:\n%s", log)
	}
}

// boundAddr reads the "binding to port" line of a server's log.
func boundAddr(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if _, b, ok := strings.Cut(sc.Text(), "binding to port "); ok {
			return "127.0.0.1:" + b[strings.LastIndex(b, ":")+1:]
		}
	}
	t.Fatalf("no binding line in %s", path)
	return ""
}

// start makes dataDir (and the log's directory in it) when it does not
// exist yet, as ZooKeeper's zkServer.sh does.
func TestLauncherStartMakesDataDir(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "not", "yet")
	cfg := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte("dataDir="+data+"\nclientPort=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(binDir, "zkServer.sh")
	out, err := exec.Command(script, "start", cfg).CombinedOutput()
	t.Cleanup(func() { exec.Command(script, "stop", cfg).Run() })
	if err != nil || !strings.Contains(string(out), "STARTED") {
		t.Fatalf("start with a dataDir not yet made: %v\n%s", err, out)
	}
	if out, err := exec.Command(script, "stop", cfg).CombinedOutput(); err != nil || !strings.Contains(string(out), "STOPPED") {
		t.Fatalf("stop: %v\n%s", err, out)
	}
}
