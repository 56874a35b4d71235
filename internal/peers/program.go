package peers

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Params are the parameters every peer program takes, as flags of the
// same names (--server, --scenario, ...).
type Params struct {
	// Server is the ZooKeeper address, host:port.
	Server string
	// Scenario is "lock" (acquire+release), "cas" (one ID by
	// compare-and-set), "pipeline" (reads with Outstanding in flight on
	// one session), "get" and "set" (gozk: Outstanding goroutines reading,
	// or writing, one node on one session), the recipe scenarios "rwlock", "semaphore",
	// "trylock", "queue" and "election" (Curator and kazoo, not rwlock on
	// kazoo: bench/README.md), or "interop", "latchinterop", "rwinterop"
	// or "seminterop" (Curator only: see BuildCurator).
	Scenario string
	// Clients is the number of clients, each on a session of its own.
	Clients int
	// Duration is how long to measure; Warmup runs the scenario first
	// without measuring. Ops, when > 0, bounds the operations per client
	// instead (interop uses it).
	Duration, Warmup time.Duration
	Ops              int
	// Path is the node (lock directory, counter) the scenario works on.
	Path string
	// Marker is the interop modes' marker node (rwinterop, seminterop:
	// the directory of their markers).
	Marker string
	// Leases is the seminterop mode's number of semaphore leases.
	Leases int
	// Outstanding is the pipeline's number of reads in flight.
	Outstanding int
	// SessionTimeout is every session's requested timeout.
	SessionTimeout time.Duration
}

// ErrBadParams is wrapped by Params.Validate's errors.
var ErrBadParams = errors.New("peers: bad parameters")

// Validate checks p and fills in defaults: SessionTimeout 10s,
// Outstanding 64.
func (p *Params) Validate() error {
	switch {
	case p.Server == "":
		return fmt.Errorf("%w: no server", ErrBadParams)
	case p.Scenario == "":
		return fmt.Errorf("%w: no scenario", ErrBadParams)
	case p.Clients < 1:
		return fmt.Errorf("%w: %d clients", ErrBadParams, p.Clients)
	case p.Duration < 0 || p.Warmup < 0 || p.Ops < 0 || p.Outstanding < 0 || p.SessionTimeout < 0:
		return fmt.Errorf("%w: negative duration, warmup, ops, outstanding or session timeout", ErrBadParams)
	case p.Duration == 0 && p.Ops == 0:
		return fmt.Errorf("%w: neither a duration nor a number of ops", ErrBadParams)
	case !strings.HasPrefix(p.Path, "/") || len(p.Path) < 2:
		return fmt.Errorf("%w: path %q", ErrBadParams, p.Path)
	case strings.HasSuffix(p.Scenario, "interop") && !strings.HasPrefix(p.Marker, "/"):
		return fmt.Errorf("%w: %s needs a marker path, got %q", ErrBadParams, p.Scenario, p.Marker)
	case p.Scenario == "seminterop" && p.Leases < 1:
		return fmt.Errorf("%w: seminterop needs leases >= 1, got %d", ErrBadParams, p.Leases)
	}
	if p.SessionTimeout == 0 {
		p.SessionTimeout = 10 * time.Second
	}
	if p.Outstanding == 0 {
		p.Outstanding = 64
	}
	return nil
}

// Args returns p as the programs' flags.
func (p Params) Args() []string {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	args := []string{
		"--server", p.Server, "--scenario", p.Scenario, "--clients", strconv.Itoa(p.Clients),
		"--duration-ms", ms(p.Duration), "--warmup-ms", ms(p.Warmup), "--ops", strconv.Itoa(p.Ops),
		"--path", p.Path, "--outstanding", strconv.Itoa(p.Outstanding),
		"--session-timeout-ms", ms(p.SessionTimeout),
	}
	if p.Marker != "" {
		args = append(args, "--marker", p.Marker)
	}
	if p.Leases != 0 {
		args = append(args, "--leases", strconv.Itoa(p.Leases))
	}
	return args
}

// Program is a built peer program: Argv followed by Params.Args runs it.
type Program struct {
	Kind Kind
	Argv []string
	// Scenarios are the scenarios the program implements.
	Scenarios []string
}

// Supports reports whether the program implements scenario.
func (p *Program) Supports(scenario string) bool {
	for _, s := range p.Scenarios {
		if s == scenario {
			return true
		}
	}
	return false
}

// Command returns the command that runs the program with params (which
// must have passed Validate). The process gets its own process group and
// SIGKILL when ctx ends.
func (p *Program) Command(ctx context.Context, params Params) *exec.Cmd {
	argv := append(append([]string(nil), p.Argv[1:]...), params.Args()...)
	cmd := exec.CommandContext(ctx, p.Argv[0], argv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// ErrRun is wrapped by Run's errors about the program itself (it failed,
// printed no result, or printed a malformed one).
var ErrRun = errors.New("peers: program failed")

// Run runs the program with params and returns the result line it
// printed, with ProcessCPU set from the exited process's rusage. Lines the program prints to stderr are passed to progress (nil:
// dropped) as they come, on a goroutine of Run's; the last ones are also
// quoted in the error when the program fails.
func (p *Program) Run(ctx context.Context, params Params, progress func(line string)) (Result, error) {
	if err := params.Validate(); err != nil {
		return Result{}, err
	}
	if !p.Supports(params.Scenario) {
		return Result{}, fmt.Errorf("%w: %s does not implement scenario %q", ErrBadParams, p.Kind, params.Scenario)
	}
	cmd := p.Command(ctx, params)
	var out bytes.Buffer
	cmd.Stdout = &out
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return Result{}, err
	}
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("%w: %s: %v", ErrRun, p.Kind, err)
	}
	tail := &tailLines{n: 20}
	sc := bufio.NewScanner(errPipe)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		tail.add(sc.Text())
		if progress != nil {
			progress(sc.Text())
		}
	}
	_, _ = io.Copy(io.Discard, errPipe)
	werr := cmd.Wait()
	var res *Result
	var perr error
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(line, Prefix+" ") {
			continue
		}
		r, err := ParseResult(line)
		if err != nil {
			perr = err
			continue
		}
		res = &r
	}
	switch {
	case ctx.Err() != nil:
		return Result{}, ctx.Err()
	case werr != nil:
		return Result{}, fmt.Errorf("%w: %s %s: %v\nstdout:\n%s\nstderr:\n%s", ErrRun, p.Kind, params.Scenario, werr, lastLines(out.String(), 10), tail)
	case perr != nil:
		return Result{}, fmt.Errorf("%w: %s: %w", ErrRun, p.Kind, perr)
	case res == nil:
		return Result{}, fmt.Errorf("%w: %s printed no %s line\nstderr:\n%s", ErrRun, p.Kind, Prefix, tail)
	}
	res.ProcessCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return *res, nil
}

type tailLines struct {
	n     int
	lines []string
}

func (t *tailLines) add(s string) {
	t.lines = append(t.lines, s)
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
	}
}

func (t *tailLines) String() string { return strings.Join(t.lines, "\n") }

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
