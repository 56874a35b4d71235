package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/zkflow/zkflow/internal/netproxy"
)

// The emulated network. The kernel of the machine the figures come from
// has no netem queueing discipline, so the harness emulates a network
// with internal/netproxy: a TCP proxy on loopback that holds every chunk
// it reads for a constant one-way delay before writing it on, in each
// direction, as a delay line (the reader goes on reading while earlier
// chunks wait), so the delay adds latency without capping bandwidth and
// keeps the byte order. Every implementation, the peers included, dials
// the proxy instead of the server, on the emulated network's runs; the
// loopback runs dial the server directly.
//
// The proxy runs in a process of its own (the harness's binary, started
// again with proxyEnv set), so that its CPU is not charged to the
// library, whose CPU per operation is read from the harness's own
// process (see runOurs).

// network is one column of the results: loopback (clients dial the
// server) or emulated (clients dial a proxy that delays each direction by
// Delay).
type network struct {
	Name  string        `json:"name"`
	Delay time.Duration `json:"delay,omitempty"`
	// Addr is what the clients dial.
	Addr string `json:"-"`
}

// Label is the network's name in the report's tables: "loopback", or
// "0.5 ms" for an emulated network with that one-way delay.
func (n network) Label() string {
	if n.Name != emulated {
		return n.Name
	}
	return fmt.Sprintf("%g ms", float64(n.Delay)/float64(time.Millisecond))
}

const (
	loopback = "loopback"
	emulated = "emulated"
)

// proxyEnv, when set in the environment as "target delay", makes the
// harness's binary run as the emulated network's proxy instead (see
// proxyMain).
const proxyEnv = "ZKBENCH_PROXY"

// proxyMain runs the proxy process if the environment asks for it,
// and reports whether it did (the caller then exits with code): it
// forwards to the target with the delay, prints "LISTEN host:port" on
// stdout, and runs until its stdin ends (the harness closes it, or dies).
func proxyMain(stdin io.Reader, stdout, stderr io.Writer) (ran bool, code int) {
	spec := os.Getenv(proxyEnv)
	if spec == "" {
		return false, 0
	}
	target, delay, err := parseProxySpec(spec)
	if err != nil {
		fmt.Fprintln(stderr, "bench proxy:", err)
		return true, 2
	}
	p, err := netproxy.New(target)
	if err != nil {
		fmt.Fprintln(stderr, "bench proxy:", err)
		return true, 1
	}
	p.Delay(delay)
	fmt.Fprintf(stdout, "LISTEN %s\n", p.Addr())
	_, _ = io.Copy(io.Discard, stdin)
	if err := p.Close(); err != nil {
		fmt.Fprintln(stderr, "bench proxy:", err)
		return true, 1
	}
	return true, 0
}

func parseProxySpec(spec string) (string, time.Duration, error) {
	target, ds, ok := strings.Cut(spec, " ")
	if !ok || target == "" {
		return "", 0, fmt.Errorf("%s=%q: want \"host:port delay\"", proxyEnv, spec)
	}
	d, err := time.ParseDuration(ds)
	if err != nil || d < 0 {
		return "", 0, fmt.Errorf("%s=%q: bad delay", proxyEnv, spec)
	}
	return target, d, nil
}

// proxyProc is a running proxy process.
type proxyProc struct {
	Addr  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startProxy starts the proxy process in front of target, with delay one
// way, and returns once it listens (within 30s).
func startProxy(ctx context.Context, target string, delay time.Duration) (*proxyProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("emulated network: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s", proxyEnv, target, delay))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("emulated network: start proxy: %w", err)
	}
	p := &proxyProc{cmd: cmd, stdin: stdin}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case l, ok := <-line:
		if addr, found := strings.CutPrefix(l, "LISTEN "); ok && found {
			p.Addr = addr
			return p, nil
		}
		p.Close()
		return nil, fmt.Errorf("emulated network: the proxy printed %q, not its address", l)
	case <-t.C:
		p.Close()
		return nil, errors.New("emulated network: the proxy did not start within 30s")
	case <-ctx.Done():
		p.Close()
		return nil, ctx.Err()
	}
}

// Close stops the proxy (it closes its connections) and waits for it; it
// returns the CPU time the proxy process used.
func (p *proxyProc) Close() time.Duration {
	p.stdin.Close()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-done
	}
	if st := p.cmd.ProcessState; st != nil {
		return st.UserTime() + st.SystemTime()
	}
	return 0
}
