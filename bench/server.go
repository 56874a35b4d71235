package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// zkJarDir is where Debian's zookeeper package puts the server jars.
const zkJarDir = "/usr/share/java"

// serverSettings are how the harness starts its own server.
type serverSettings struct {
	// Defaults keeps ZooKeeper's own durability settings (forceSync=yes,
	// data directory on disk); otherwise the data directory is on tmpfs
	// (/dev/shm) with forceSync=no, for stable figures.
	Defaults bool
}

// Describe says what the settings are, for the report.
func (s serverSettings) Describe() string {
	if s.Defaults {
		return "standalone, ZooKeeper's default settings (forceSync=yes, dataDir on disk under " + os.TempDir() + "), tickTime=2000, JVM -Xmx1g"
	}
	return "standalone, dataDir on tmpfs (/dev/shm) with forceSync=no, tickTime=2000, JVM -Xmx1g"
}

// server is a standalone ZooKeeper the harness started: a java process of
// its own, killed (with its process group) by Close.
type server struct {
	Addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// startServer starts a standalone server from Debian's jars and waits
// until it serves (it polls the four-letter word srvr every 50ms: waiting
// for a process to come up, not ordering events).
func startServer(ctx context.Context, s serverSettings) (*server, error) {
	if _, err := exec.LookPath("java"); err != nil {
		return nil, fmt.Errorf("java not on PATH (run make bench-deps): %w", err)
	}
	if _, err := os.Stat(filepath.Join(zkJarDir, "zookeeper.jar")); err != nil {
		return nil, fmt.Errorf("ZooKeeper jars missing (run make bench-deps): %w", err)
	}
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && !s.Defaults {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "zkbench-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cfg := []string{
		"tickTime=2000",
		"dataDir=" + filepath.Join(dir, "data"),
		fmt.Sprintf("clientPort=%d", port),
		"clientPortAddress=127.0.0.1",
		"maxClientCnxns=0",
		"4lw.commands.whitelist=*",
		"admin.enableServer=false",
		"autopurge.purgeInterval=0",
	}
	if !s.Defaults {
		cfg = append(cfg, "forceSync=no")
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(strings.Join(cfg, "\n")+"\n"), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cp := filepath.Join(zkJarDir, "zookeeper.jar") + ":" + filepath.Join(zkJarDir, "zookeeper-jute.jar")
	cmd := exec.Command("java", "-Xmx1g", "-Xms1g", "-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.jmx.log4j.disable=true", "-cp", cp,
		"org.apache.zookeeper.server.ZooKeeperServerMain", filepath.Join(dir, "zoo.cfg"))
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start java: %w", err)
	}
	srv := &server{Addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(srv.done) }()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		// Each probe gets a second: a server that is starting may accept
		// the connection and answer nothing.
		pctx, pcancel := context.WithTimeout(wctx, time.Second)
		_, err := srvr(pctx, srv.Addr)
		pcancel()
		if err == nil {
			return srv, nil
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-srv.done:
			t.Stop()
			b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			srv.Close()
			return nil, fmt.Errorf("zookeeper exited while starting:\n%s", lastLines(string(b), 20))
		case <-wctx.Done():
			t.Stop()
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			_, last := srvr(pctx, srv.Addr)
			pcancel()
			b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			srv.Close()
			return nil, fmt.Errorf("zookeeper not serving at %s: %w (last answer: %v)\n%s", srv.Addr, wctx.Err(), last, lastLines(string(b), 20))
		case <-t.C:
		}
	}
}

// Close kills the server and removes its directory.
func (s *server) Close() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	os.RemoveAll(s.dir)
}

// srvr asks addr for the four-letter word srvr; an error unless it
// serves (its answer has a Mode line).
func srvr(ctx context.Context, addr string) (string, error) {
	out, err := fourLetter(ctx, addr, "srvr")
	if err != nil {
		return "", err
	}
	if !strings.Contains(out, "Mode: ") {
		return "", fmt.Errorf("%s not serving: %q", addr, strings.TrimSpace(out))
	}
	return out, nil
}

// mntrValue reads one numeric value of the four-letter word mntr.
func mntrValue(ctx context.Context, addr, key string) (int64, error) {
	out, err := fourLetter(ctx, addr, "mntr")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if ok && k == key {
			var n int64
			if _, err := fmt.Sscan(strings.TrimSpace(v), &n); err != nil {
				return 0, fmt.Errorf("mntr %s=%q: %w", key, v, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("mntr of %s has no %s (is 4lw.commands.whitelist set?)", addr, key)
}

// serverVersion is the "Zookeeper version:" line of srvr.
func serverVersion(ctx context.Context, addr string) string {
	out, err := srvr(ctx, addr)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "Zookeeper version: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func fourLetter(ctx context.Context, addr, word string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(5 * time.Second)
	}
	_ = c.SetDeadline(dl)
	if _, err := c.Write([]byte(word)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	if err != nil && len(b) == 0 {
		return "", err
	}
	return string(b), nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
