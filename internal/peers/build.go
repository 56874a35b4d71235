package peers

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Kind names a peer implementation.
type Kind string

// The peers.
const (
	Curator Kind = "curator" // Apache Curator 5.4 (Java): InterProcessMutex, DistributedAtomicLong
	Kazoo   Kind = "kazoo"   // kazoo (Python): Lock, Counter
	GoZK    Kind = "gozk"    // github.com/go-zookeeper/zk: its Lock, CAS by hand, raw pipelined reads
)

// Kinds lists every peer.
var Kinds = []Kind{Curator, Kazoo, GoZK}

// JarDir is where Debian puts the Curator, ZooKeeper and dependency jars.
const JarDir = "/usr/share/java"

// PythonPath is the interpreter the kazoo program runs under: Debian's,
// which sees the python3-kazoo package.
const PythonPath = "/usr/bin/python3"

// curatorJars is the classpath of the Curator program, from Debian's
// libcurator-*-java (curator-x-discovery for the discovery interop
// program, with the Jackson 2 jars its JsonInstanceSerializer needs),
// zookeeper, guava and slf4j packages.
var curatorJars = []string{
	"curator-recipes.jar", "curator-framework.jar", "curator-client.jar", "curator-x-discovery.jar",
	"jackson-databind.jar", "jackson-core.jar", "jackson-annotations.jar",
	"zookeeper.jar", "zookeeper-jute.jar", "guava.jar", "slf4j-api.jar", "slf4j-nop.jar",
}

// ErrUnavailable is wrapped by Available's errors: the peer's runtime or
// libraries are not installed.
var ErrUnavailable = errors.New("peers: not installed")

// installHint says how to install a missing peer.
const installHint = "run `make bench-deps` (apt-get install default-jdk-headless libcurator-recipes-java libcurator-discovery-java python3-kazoo)"

// Available reports whether peer k can be built and run on this machine.
// The error wraps ErrUnavailable and says what is missing and how to
// install it.
func Available(k Kind) error {
	missing := func(what string) error { return fmt.Errorf("%w: %s: %s; %s", ErrUnavailable, k, what, installHint) }
	switch k {
	case Curator:
		for _, tool := range []string{"java", "javac"} {
			if _, err := exec.LookPath(tool); err != nil {
				return missing(tool + " not on PATH")
			}
		}
		for _, j := range curatorJars {
			if _, err := os.Stat(filepath.Join(JarDir, j)); err != nil {
				return missing(filepath.Join(JarDir, j) + " missing")
			}
		}
	case Kazoo:
		if _, err := os.Stat(PythonPath); err != nil {
			return missing(PythonPath + " missing")
		}
		if err := exec.Command(PythonPath, "-c", "import kazoo").Run(); err != nil {
			return missing("python module kazoo not importable by " + PythonPath)
		}
	case GoZK:
		if _, err := goTool(); err != nil {
			return missing(err.Error())
		}
	default:
		return fmt.Errorf("%w: unknown peer %q", ErrBadParams, k)
	}
	if _, err := sourceDir(k); err != nil {
		return missing(err.Error())
	}
	return nil
}

// sourceDir is bench/peers/<k> in this module's source tree, found from
// this file's location (the programs are built from source, so the tree
// must be there: it is, for tests and go run).
func sourceDir(k Kind) (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("source tree not found")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "bench", "peers", string(k))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("peer sources not found at %s", dir)
	}
	return filepath.Clean(dir), nil
}

func goTool() (string, error) {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); runtime.GOROOT() != "" {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("the go tool is not on PATH")
	}
	return p, nil
}

// Build builds peer k into a directory under cacheDir named by a hash of
// its sources (so an unchanged program is not built again) and returns it.
// Curator: javac against Debian's jars; kazoo: nothing to build; gozk: go
// build. The error wraps ErrUnavailable when the peer is not installed.
func Build(k Kind, cacheDir string) (*Program, error) {
	if err := Available(k); err != nil {
		return nil, err
	}
	switch k {
	case Curator:
		return BuildCurator(cacheDir)
	case Kazoo:
		dir, _ := sourceDir(Kazoo)
		return &Program{Kind: Kazoo, Argv: []string{PythonPath, "-u", filepath.Join(dir, "kazoo_peer.py")},
			Scenarios: []string{"lock", "cas", "semaphore", "trylock", "queue", "election", "rebalance"}}, nil
	default:
		return buildGoZK(cacheDir)
	}
}

// BuildCurator compiles the Curator program (bench/peers/curator) with
// javac into cacheDir (a directory per source hash) and returns it. Its
// scenarios are lock, cas and interop: in interop, each of --clients
// clients (a session each) acquires an InterProcessMutex on --path --ops
// times; while holding it, it creates --marker as an ephemeral node and
// deletes it again, so a second holder at the same time fails with
// NodeExists, which the program reports on stderr ("OVERLAP ...") and by
// exiting with status 3. Its result line counts the holds. rwinterop does
// the same with InterProcessReadWriteLock, readers and writers, and a
// directory of markers (bench/peers/curator/RWInterop.java). In
// seminterop (SemInterop.java) each client takes a lease of an
// InterProcessSemaphoreV2 of --leases leases instead, and while holding it
// makes a sequential marker under the directory --marker and counts the
// markers: more than --leases is reported the same way. Its discovery
// scenario (DiscoveryPeer.java) times ServiceProvider.getInstance() over a
// ServiceCache; its main class DiscoveryInterop (Program.Main) is an
// interactive ServiceDiscovery for recipes/discovery's interop test.
func BuildCurator(cacheDir string) (*Program, error) {
	if err := Available(Curator); err != nil {
		return nil, err
	}
	src, _ := sourceDir(Curator)
	out, err := hashedDir(cacheDir, "curator", ".java", src)
	if err != nil {
		return nil, err
	}
	cp := make([]string, len(curatorJars))
	for i, j := range curatorJars {
		cp[i] = filepath.Join(JarDir, j)
	}
	classpath := strings.Join(cp, ":")
	if _, err := os.Stat(filepath.Join(out, "CuratorPeer.class")); err != nil {
		javas, _ := filepath.Glob(filepath.Join(src, "*.java"))
		tmp, err := os.MkdirTemp(filepath.Dir(out), "build-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		cmd := exec.Command("javac", append([]string{"-nowarn", "-cp", classpath, "-d", tmp}, javas...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%w: javac: %v\n%s", ErrRun, err, b)
		}
		if err := os.Rename(tmp, out); err != nil && !errors.Is(err, fs.ErrExist) {
			if _, serr := os.Stat(filepath.Join(out, "CuratorPeer.class")); serr != nil {
				return nil, err
			}
		}
	}
	return &Program{Kind: Curator,
		Argv: []string{"java", "-Xss512k", "-XX:+UseParallelGC", "-cp", out + ":" + classpath, "CuratorPeer"},
		Scenarios: []string{"lock", "cas", "interop", "latchinterop", "rwinterop", "seminterop",
			"rwlock", "semaphore", "trylock", "queue", "election", "discovery"}}, nil
}

// Main returns the command line that runs main class class of the Curator
// program p (built by BuildCurator) on its classpath, such as
// DiscoveryInterop (bench/peers/curator/DiscoveryInterop.java), a program
// driven by commands on its stdin.
func (p *Program) Main(class string) []string {
	argv := append([]string(nil), p.Argv...)
	argv[len(argv)-1] = class
	return argv
}

func buildGoZK(cacheDir string) (*Program, error) {
	src, _ := sourceDir(GoZK)
	// The program compiles in this package's result format: hash it too.
	self := filepath.Join(src, "..", "..", "..", "internal", "peers")
	out, err := hashedDir(cacheDir, "gozk", ".go", src, self)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(out, "gozk-peer")
	if _, err := os.Stat(bin); err != nil {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return nil, err
		}
		gotool, err := goTool()
		if err != nil {
			return nil, err
		}
		tmp := bin + fmt.Sprintf(".tmp%d", os.Getpid())
		cmd := exec.Command(gotool, "build", "-o", tmp, ".")
		cmd.Dir = src
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%w: go build: %v\n%s", ErrRun, err, b)
		}
		if err := os.Rename(tmp, bin); err != nil {
			return nil, err
		}
	}
	return &Program{Kind: GoZK, Argv: []string{bin}, Scenarios: []string{"lock", "cas", "pipeline", "get", "set"}}, nil
}

// hashedDir returns cacheDir/<name>-<hash of the files in srcs ending in
// ext>, creating cacheDir.
func hashedDir(cacheDir, name, ext string, srcs ...string) (string, error) {
	if cacheDir == "" {
		return "", fmt.Errorf("%w: no cache directory", ErrBadParams)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	var files []string
	for _, src := range srcs {
		found, err := filepath.Glob(filepath.Join(src, "*"+ext))
		if err != nil || len(found) == 0 {
			return "", fmt.Errorf("%w: %s: no %s sources in %s", ErrUnavailable, name, ext, src)
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	return filepath.Join(cacheDir, name+"-"+hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// DefaultCacheDir is where Build keeps the built programs unless told
// otherwise: the user's cache directory (os.UserCacheDir) or, failing
// that, the temporary directory, under zkflow-peers. Programs are kept by
// source hash, so a stale build is never used.
func DefaultCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil || base == "" {
		base = os.TempDir()
	}
	return filepath.Join(base, "zkflow-peers")
}
