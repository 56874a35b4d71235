package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/zkflow/zkflow/internal/peers"
)

// machine describes where the figures were measured.
type machine struct {
	CPU, Cores, Memory, OS, Kernel string
	Go, Java, Python, Kazoo        string
	Curator, ZooKeeper             string
	LoadBefore, LoadAfter          string
}

func describeMachine(ctx context.Context, addr string) machine {
	m := machine{
		Cores:  fmt.Sprint(runtime.NumCPU()),
		Go:     runtime.Version(),
		CPU:    procField("/proc/cpuinfo", "model name"),
		Memory: procField("/proc/meminfo", "MemTotal"),
		OS:     strings.Trim(osRelease("PRETTY_NAME"), `"`),
		Kernel: firstLine("/proc/sys/kernel/osrelease"),
		Java:   firstLineOf(ctx, "java", "-version"),
		Python: firstLineOf(ctx, peers.PythonPath, "--version"),
		Kazoo:  firstLineOf(ctx, peers.PythonPath, "-c", "import kazoo.version as v; print(v.__version__)"),
		Curator: func() string {
			jars, _ := filepath.Glob(filepath.Join(peers.JarDir, "curator-recipes-*.jar"))
			if len(jars) == 0 {
				return "not installed"
			}
			return strings.TrimSuffix(strings.TrimPrefix(filepath.Base(jars[0]), "curator-recipes-"), ".jar")
		}(),
		ZooKeeper:  serverVersion(ctx, addr),
		LoadBefore: loadavg(),
	}
	return m
}

func loadavg() string {
	f := strings.Fields(firstLine("/proc/loadavg"))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func osRelease(key string) string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			return v
		}
	}
	return "unknown"
}

func firstLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	l, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(l)
}

// firstLineOf runs a command and returns the first line it printed
// (stdout or stderr: java -version prints on stderr).
func firstLineOf(ctx context.Context, name string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return "not available"
	}
	l, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(l)
}
