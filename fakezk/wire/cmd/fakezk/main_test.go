package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"go.uber.org/goleak"
)

// binDir holds the command built once for the tests that exec it, beside
// a copy of the launcher (bin/zkServer.sh): a directory usable as
// ZOOKEEPER_BIN_PATH.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakezk-cmd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := func() int {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "fakezk"), ".").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
			return 1
		}
		script, err := os.ReadFile("bin/zkServer.sh")
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "zkServer.sh"), script, 0o755)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// proc is one run of the command.
type proc struct {
	cmd  *exec.Cmd
	addr string           // 127.0.0.1:port, from its "binding to port" line
	log  *strings.Builder // guarded by mu
	mu   *sync.Mutex
	done chan struct{} // closed when the output is read to its end
	exit chan error    // the command's Wait
}

// startProc execs name (the built command or the launcher) with args and
// waits, at most 20s, for its "binding to port" line. The process is
// killed at the test's end if it still runs.
func startProc(t testing.TB, env []string, name string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	// One pipe for stdout and stderr: the log in the order written.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, log: &strings.Builder{}, done: make(chan struct{}), exit: make(chan error, 1)}
	bound := make(chan string, 1)
	var mu sync.Mutex
	p.mu = &mu
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l := sc.Text()
			mu.Lock()
			p.log.WriteString(l + "\n")
			mu.Unlock()
			if _, port, ok := strings.Cut(l, "binding to port "); ok {
				bound <- port
			}
		}
		r.Close()
		p.exit <- cmd.Wait()
	}()
	t.Cleanup(func() { p.kill() })
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	select {
	case b := <-bound:
		// "0.0.0.0/0.0.0.0:port" or "127.0.0.1/127.0.0.1:port"
		p.addr = "127.0.0.1:" + b[strings.LastIndex(b, ":")+1:]
	case <-p.done:
		t.Fatalf("%s exited before serving: %v\n%s", name, <-p.exit, p.output())
	case <-timeout.C:
		p.kill()
		t.Fatalf("%s: no binding line within 20s\n%s", name, p.output())
	}
	return p
}

// output returns what the process has written so far.
func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// kill SIGKILLs the process and waits for it; it returns Wait's error.
func (p *proc) kill() error {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	select {
	case err := <-p.exit:
		p.exit <- err
		return err
	default:
		return nil
	}
}

// wait waits, at most 20s, for the process to exit by itself.
func (p *proc) wait(t *testing.T) error {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	select {
	case <-p.done:
		err := <-p.exit
		p.exit <- err
		return err
	case <-timeout.C:
		t.Fatalf("still running after 20s\n%s", p.output())
		return nil
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// dial connects go-zookeeper to addr and waits, at most 10s, for its
// session.
func dial(t testing.TB, addr string) *gozk.Conn {
	t.Helper()
	c, events, err := gozk.Connect([]string{addr}, 4*time.Second, gozk.WithLogger(quiet{}), gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case ev := <-events:
			if ev.State == gozk.StateHasSession {
				go func() { // the channel must be drained for the client to go on
					for range events {
					}
				}()
				return c
			}
		case <-timeout.C:
			t.Fatalf("no session with %s within 10s", addr)
		}
	}
}

// execOut runs the command to its end and returns its output.
func execOut(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}
