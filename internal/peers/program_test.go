package peers

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func validParams() Params {
	return Params{Server: "127.0.0.1:2181", Scenario: "lock", Clients: 4, Duration: 2 * time.Second,
		Warmup: 500 * time.Millisecond, Path: "/bench/lock"}
}

func TestParamsValidate(t *testing.T) {
	p := validParams()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if p.SessionTimeout != 10*time.Second || p.Outstanding != 64 {
		t.Fatalf("defaults: %+v", p)
	}
	for name, f := range map[string]func(*Params){
		"no server":             func(p *Params) { p.Server = "" },
		"no scenario":           func(p *Params) { p.Scenario = "" },
		"zero clients":          func(p *Params) { p.Clients = 0 },
		"negative ops":          func(p *Params) { p.Ops = -1 },
		"negative warmup":       func(p *Params) { p.Warmup = -time.Second },
		"nothing to do":         func(p *Params) { p.Duration, p.Ops = 0, 0 },
		"relative path":         func(p *Params) { p.Path = "bench" },
		"root path":             func(p *Params) { p.Path = "/" },
		"interop, no mark":      func(p *Params) { p.Scenario, p.Marker = "interop", "" },
		"seminterop, no leases": func(p *Params) { p.Scenario, p.Marker, p.Leases = "seminterop", "/m", 0 },
		"rwinterop, no mark":    func(p *Params) { p.Scenario, p.Marker = "rwinterop", "" },
		"latchinterop, no mark": func(p *Params) { p.Scenario, p.Marker = "latchinterop", "" },
	} {
		p := validParams()
		f(&p)
		if err := p.Validate(); !errors.Is(err, ErrBadParams) {
			t.Errorf("%s: Validate = %v, want ErrBadParams", name, err)
		}
	}
}

// What Args writes, ParseArgs (the Go program's side) reads back.
func TestArgsRoundTrip(t *testing.T) {
	p := validParams()
	p.Scenario, p.Marker, p.Ops, p.Leases = "seminterop", "/bench/markers", 20, 3
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	got, err := ParseArgs(p.Args())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, p)
	}
	if _, err := ParseArgs([]string{"--server", "x:1", "--clients", "0", "--path", "/a", "--ops", "1", "--scenario", "cas"}); !errors.Is(err, ErrBadParams) {
		t.Fatalf("zero clients: %v", err)
	}
}

// sh stands in for a peer program: Run must take its result line, and
// turn every way it can go wrong into an error that says so.
func TestProgramRun(t *testing.T) {
	ctx := context.Background()
	prog := func(script string) *Program {
		return &Program{Kind: "sh", Argv: []string{"sh", "-c", script, "sh"}, Scenarios: []string{"lock"}}
	}
	good := prog(`echo "starting" >&2; echo "noise"; echo "ZKBENCH impl=sh scenario=lock clients=$6 ops=10 errors=0 secs=1.0 total=12"`)
	var progress []string
	r, err := good.Run(ctx, validParams(), func(l string) { progress = append(progress, l) })
	if err != nil {
		t.Fatal(err)
	}
	if r.Impl != "sh" || r.Clients != 4 || r.Ops != 10 || r.Total != 12 {
		t.Fatalf("result %+v", r)
	}
	if len(progress) != 1 || progress[0] != "starting" {
		t.Fatalf("stderr lines %q", progress)
	}

	for name, script := range map[string]string{
		"exit status": `echo "ZKBENCH impl=sh scenario=lock clients=1 ops=1 secs=1"; echo "OVERLAP client 1" >&2; exit 3`,
		"no result":   `echo hello`,
		"bad result":  `echo "ZKBENCH impl=sh scenario=lock clients=1 ops=many secs=1"`,
	} {
		_, err := prog(script).Run(ctx, validParams(), nil)
		if !errors.Is(err, ErrRun) {
			t.Errorf("%s: %v, want ErrRun", name, err)
		}
		if name == "exit status" && !strings.Contains(err.Error(), "OVERLAP client 1") {
			t.Errorf("the error does not quote the program's stderr: %v", err)
		}
	}
	p := validParams()
	p.Scenario = "pipeline"
	if _, err := good.Run(ctx, p, nil); !errors.Is(err, ErrBadParams) {
		t.Errorf("unsupported scenario: %v", err)
	}
	p = validParams()
	p.Clients = -3
	if _, err := good.Run(ctx, p, nil); !errors.Is(err, ErrBadParams) {
		t.Errorf("negative clients: %v", err)
	}
}

func TestAvailableUnknown(t *testing.T) {
	if err := Available("cobol"); !errors.Is(err, ErrBadParams) {
		t.Fatalf("Available(cobol) = %v", err)
	}
	if _, err := Build(GoZK, ""); err == nil {
		t.Fatal("Build with no cache directory succeeded")
	}
}
