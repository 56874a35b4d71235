package zkadapter

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// zkModule is the module path of the client the adapter reaches into.
const zkModule = "github.com/go-zookeeper/zk"

// verifiedZKVersions are the versions of go-zookeeper whose unexported
// functions and structs the adapter has been checked against: the
// signatures of (*Conn).queueRequest, (*Conn).flushUnsentRequests and
// encodePacket, the layouts of response, responseHeader and the receive
// callback that wire.go mirrors, the fields it reads (Conn.sendChan,
// request.pkt: also checked at run time), the send loop encoding each
// request right before writing it (the guard in do.go relies on that),
// and StateDisconnected being reported only after the connection's send
// and receive loops have returned (connectionEnded relies on that). A
// version not listed may have moved any of them, and a go:linkname to a
// changed signature or layout corrupts memory instead of failing to build.
// A test fails if go.mod requires a version not listed here.
var verifiedZKVersions = []string{"v1.0.4"}

// ErrUnsupportedZK is wrapped by the error verifyLinkedZK returns when the
// binary links a go-zookeeper the adapter has not been verified with, or
// when it cannot tell which one it links.
var ErrUnsupportedZK = errors.New("zkadapter: go-zookeeper version not verified")

// ZKVersionError says which go-zookeeper the binary links and that the
// adapter refuses it. errors.Is(err, ErrUnsupportedZK) is true.
type ZKVersionError struct {
	// Found is the go-zookeeper the binary links, as far as it can be told:
	// a version ("v1.0.5"), or where a go.mod replace directive points
	// ("../zk", a directory with no version; "example.com/fork v1.0.4",
	// another module), or in a test binary the source file its code was
	// compiled from when that names no version. Empty when nothing says;
	// Reason then says why.
	Found string
	// Reason says why Found is refused when the version alone does not:
	// "no build information", "not in the build information",
	// "replaced by a directory", "replaced by another module",
	// "source path names no version". Empty for a version not listed.
	Reason string
}

func (e *ZKVersionError) Error() string {
	var b strings.Builder
	if e.Found == "" {
		b.WriteString("zkadapter: cannot tell which " + zkModule + " is linked")
	} else {
		b.WriteString("zkadapter: linked " + zkModule + " " + e.Found)
	}
	if e.Reason != "" {
		b.WriteString(" (" + e.Reason + ")")
	}
	fmt.Fprintf(&b, ": the adapter is verified only with %s", strings.Join(verifiedZKVersions, ", "))
	return b.String()
}

// Unwrap makes errors.Is(err, ErrUnsupportedZK) true.
func (e *ZKVersionError) Unwrap() error { return ErrUnsupportedZK }

// verifyLinkedZK returns nil if the go-zookeeper linked into this binary
// is one of verifiedZKVersions, else a *ZKVersionError. Whatever cannot be
// told is refused: no escape hatch, since the alternative to refusing is
// memory corruption.
//
// The version comes from the binary's build information (the go command
// records every module linked; a replace directive is followed). One case
// needs more: a test binary, whose build information the go command fills
// with the main module only (golang/go#33976, #76926). There, and only
// when the build information lists no dependency at all, the version is
// read from the source path the compiler recorded for go-zookeeper's code,
// which names the module cache directory it was compiled from
// (".../github.com/go-zookeeper/zk@v1.0.4/conn.go", or without the prefix
// under -trimpath). A binary whose build information lists dependencies
// but not go-zookeeper, or that has none (built outside module mode), is
// refused.
func verifyLinkedZK() error {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	pc := reflect.ValueOf(zk.Connect).Pointer()
	file, _ := runtime.FuncForPC(pc).FileLine(pc)
	if err := checkZKVersion(info, file); err != nil {
		return err
	}
	if err := checkLayout(); err != nil {
		return &ZKVersionError{Found: "a verified version with another layout", Reason: err.Error()}
	}
	return nil
}

// checkZKVersion is verifyLinkedZK's decision: info is the binary's build
// information (nil when it has none) and source the file the compiler
// recorded for a function of go-zookeeper, consulted only when info lists
// no dependency (a test binary).
func checkZKVersion(info *debug.BuildInfo, source string) error {
	if info == nil {
		return &ZKVersionError{Reason: "no build information"}
	}
	if len(info.Deps) == 0 && info.Main.Path != zkModule {
		v, ok := zkVersionFromSource(source)
		if !ok {
			return &ZKVersionError{Found: source, Reason: "source path names no version"}
		}
		return checkVersion(v)
	}
	m := findModule(info)
	if m == nil {
		return &ZKVersionError{Reason: "not in the build information"}
	}
	if r := m.Replace; r != nil {
		switch {
		case r.Version == "" || r.Version == "(devel)": // the go command records "(devel)"
			return &ZKVersionError{Found: r.Path, Reason: "replaced by a directory"}
		case r.Path != zkModule:
			return &ZKVersionError{Found: r.Path + " " + r.Version, Reason: "replaced by another module"}
		}
		return checkVersion(r.Version)
	}
	return checkVersion(m.Version)
}

// findModule returns go-zookeeper's entry in info, or nil.
func findModule(info *debug.BuildInfo) *debug.Module {
	if info.Main.Path == zkModule {
		return &info.Main
	}
	for _, d := range info.Deps {
		if d.Path == zkModule {
			return d
		}
	}
	return nil
}

// zkVersionFromSource returns the version in a source path under the
// module cache (or -trimpath's module-path@version prefix): the part
// between "github.com/go-zookeeper/zk@" and the next slash. A replaced or
// vendored copy has no version in its path.
func zkVersionFromSource(file string) (string, bool) {
	const marker = zkModule + "@"
	i := strings.LastIndex(file, marker)
	if i < 0 || (i > 0 && file[i-1] != '/') {
		return "", false
	}
	v, _, ok := strings.Cut(file[i+len(marker):], "/")
	return v, ok && v != ""
}

func checkVersion(v string) error {
	if slices.Contains(verifiedZKVersions, v) {
		return nil
	}
	return &ZKVersionError{Found: v}
}
