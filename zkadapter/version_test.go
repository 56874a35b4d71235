package zkadapter

import (
	"bufio"
	"errors"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// The go-zookeeper this test binary links (the version go.mod requires)
// passes. A test binary's build information lists no dependency, so this
// is the path that reads the version from go-zookeeper's source path.
func TestVerifyLinkedZK(t *testing.T) {
	if err := verifyLinkedZK(); err != nil {
		t.Fatalf("verifyLinkedZK: %v", err)
	}
}

func TestCheckZKVersion(t *testing.T) {
	const cache = "/root/go/pkg/mod/github.com/go-zookeeper/zk@"
	main := debug.Module{Path: "example.com/app", Version: "(devel)"}
	dep := func(v string, replace *debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{Main: main, Deps: []*debug.Module{
			{Path: "github.com/benbjohnson/clock", Version: "v1.3.5"},
			{Path: zkModule, Version: v, Replace: replace},
		}}
	}
	tests := []struct {
		name   string
		info   *debug.BuildInfo
		source string
		found  string // "" with ok: accepted
		reason string
		ok     bool
	}{
		{name: "verified", info: dep("v1.0.4", nil), ok: true},
		{name: "older", info: dep("v1.0.3", nil), found: "v1.0.3"},
		{name: "newer", info: dep("v1.0.5", nil), found: "v1.0.5"},
		{name: "pseudo-version", info: dep("v1.0.5-0.20240101000000-abcdefabcdef", nil), found: "v1.0.5-0.20240101000000-abcdefabcdef"},
		{name: "replaced by a verified version", info: dep("v1.0.3", &debug.Module{Path: zkModule, Version: "v1.0.4"}), ok: true},
		{name: "replaced by an unverified version", info: dep("v1.0.4", &debug.Module{Path: zkModule, Version: "v1.0.5"}), found: "v1.0.5"},
		{name: "replaced by a directory", info: dep("v1.0.4", &debug.Module{Path: "../zk", Version: "(devel)"}), found: "../zk", reason: "replaced by a directory"},
		{name: "replaced by a directory, no version", info: dep("v1.0.4", &debug.Module{Path: "/src/zk"}), found: "/src/zk", reason: "replaced by a directory"},
		{name: "replaced by a fork", info: dep("v1.0.4", &debug.Module{Path: "example.com/fork/zk", Version: "v1.0.4"}), found: "example.com/fork/zk v1.0.4", reason: "replaced by another module"},
		{name: "module missing", info: &debug.BuildInfo{Main: main, Deps: []*debug.Module{{Path: "github.com/benbjohnson/clock", Version: "v1.3.5"}}},
			source: cache + "v1.0.4/conn.go", reason: "not in the build information"},
		{name: "no build information", source: cache + "v1.0.4/conn.go", reason: "no build information"},
		// A test binary: the build information has the main module only.
		{name: "test binary, verified", info: &debug.BuildInfo{Main: main}, source: cache + "v1.0.4/conn.go", ok: true},
		{name: "test binary, -trimpath", info: &debug.BuildInfo{Main: main}, source: "github.com/go-zookeeper/zk@v1.0.4/conn.go", ok: true},
		{name: "test binary, unverified", info: &debug.BuildInfo{Main: main}, source: cache + "v1.0.5/conn.go", found: "v1.0.5"},
		{name: "test binary, directory", info: &debug.BuildInfo{Main: main}, source: "/src/zk/conn.go", found: "/src/zk/conn.go", reason: "source path names no version"},
		{name: "test binary, vendored", info: &debug.BuildInfo{Main: main}, source: "/src/app/vendor/github.com/go-zookeeper/zk/conn.go",
			found: "/src/app/vendor/github.com/go-zookeeper/zk/conn.go", reason: "source path names no version"},
		{name: "test binary, fork", info: &debug.BuildInfo{Main: main}, source: "/root/go/pkg/mod/example.com/xgithub.com/go-zookeeper/zk@v1.0.4/conn.go",
			found: "/root/go/pkg/mod/example.com/xgithub.com/go-zookeeper/zk@v1.0.4/conn.go", reason: "source path names no version"},
		{name: "go-zookeeper is the main module", info: &debug.BuildInfo{Main: debug.Module{Path: zkModule, Version: "(devel)"}}, found: "(devel)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkZKVersion(tc.info, tc.source)
			if tc.ok {
				if err != nil {
					t.Fatalf("checkZKVersion: %v, want nil", err)
				}
				return
			}
			var ve *ZKVersionError
			if !errors.As(err, &ve) || !errors.Is(err, ErrUnsupportedZK) {
				t.Fatalf("checkZKVersion: %v, want a *ZKVersionError wrapping ErrUnsupportedZK", err)
			}
			if ve.Found != tc.found || ve.Reason != tc.reason {
				t.Errorf("Found, Reason = %q, %q; want %q, %q", ve.Found, ve.Reason, tc.found, tc.reason)
			}
			msg := err.Error()
			for _, want := range append([]string{tc.found, tc.reason}, verifiedZKVersions...) {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not name %q", msg, want)
				}
			}
		})
	}
}

// A test fails if go.mod moves to a version of go-zookeeper the adapter
// has not been verified with (or replaces it): the require line is read
// from go.mod itself.
func TestGoModZKVersionVerified(t *testing.T) {
	f, err := os.Open("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var required []string
	block := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "//")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
			continue
		case block != "" && fields[0] == ")":
			block = ""
			continue
		case block == "" && len(fields) == 2 && fields[1] == "(":
			block = fields[0]
			continue
		}
		verb := block
		if verb == "" {
			verb, fields = fields[0], fields[1:]
		}
		if len(fields) == 0 || fields[0] != zkModule {
			continue
		}
		switch verb {
		case "require":
			if len(fields) < 2 {
				t.Fatalf("go.mod: malformed require of %s: %q", zkModule, sc.Text())
			}
			required = append(required, fields[1])
		case "replace":
			t.Errorf("go.mod replaces %s (%q): the adapter is verified only with the released %v", zkModule, sc.Text(), verifiedZKVersions)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(required) != 1 {
		t.Fatalf("go.mod requires %s %d times (%v), want once", zkModule, len(required), required)
	}
	if !slices.Contains(verifiedZKVersions, required[0]) {
		t.Errorf("go.mod requires %s %s; zkadapter is verified only with %v: check the unexported functions and structs it reaches with go:linkname against the new version, then add it to verifiedZKVersions",
			zkModule, required[0], verifiedZKVersions)
	}
}

// The fields the Conn reads by reflection are where it takes them to be
// in the go-zookeeper it is built with: the send queue (its length is
// read) and the request body (recvReply finds its call through it).
func TestLinkedLayout(t *testing.T) {
	if err := checkLayout(); err != nil {
		t.Fatal(err)
	}
	if pktOffset == 0 {
		t.Fatal("request.pkt at offset 0: the layout check failed when the package was initialized")
	}
	zc, _, err := zk.Connect([]string{"127.0.0.1:1"}, time.Second, zk.WithLogInfo(false), zk.WithLogger(discard{}))
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	if q := zkSendQueue(zc); cap(q) != 16 || len(q) != 0 {
		t.Fatalf("send queue: len %d cap %d, want 0 and 16 (go-zookeeper's sendChanSize)", len(q), cap(q))
	}
}

type discard struct{}

func (discard) Printf(string, ...any) {}
