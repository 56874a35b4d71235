// Package zkqueue builds and runs ZkQueuePeer, a Java program that drives
// ZooKeeper's own DistributedQueue recipe (Debian's libzookeeper-java,
// /usr/share/java/zookeeper-recipes-queue.jar), for the interop test of
// recipes/queue: it offers n items or takes n items on one directory.
package zkqueue

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// JarDir is where Debian puts the ZooKeeper jars.
const JarDir = "/usr/share/java"

// jars is the program's classpath: the queue recipe and ZooKeeper's
// client (libzookeeper-java, which the zookeeper package pulls in) and
// slf4j (libslf4j-java, a dependency of it).
var jars = []string{"zookeeper-recipes-queue.jar", "zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar"}

// ErrUnavailable: a JDK or a jar is missing.
var ErrUnavailable = errors.New("zkqueue: not installed")

// Program is the compiled peer.
type Program struct{ argv []string }

// Build compiles ZkQueuePeer.java with javac into a directory under
// cacheDir named by the source's hash, once, and returns the program. The
// error wraps ErrUnavailable when java, javac or a jar is missing.
func Build(cacheDir string) (*Program, error) {
	for _, tool := range []string{"java", "javac"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%w: %s not on PATH (apt-get install default-jdk-headless)", ErrUnavailable, tool)
		}
	}
	var cp []string
	for _, j := range jars {
		p := filepath.Join(JarDir, j)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%w: %s missing (apt-get install zookeeper)", ErrUnavailable, p)
		}
		cp = append(cp, p)
	}
	classpath := strings.Join(cp, ":")
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "ZkQueuePeer.java")
	b, err := os.ReadFile(src)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	out := filepath.Join(cacheDir, "zkqueue-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(out, "ZkQueuePeer.class")); err != nil {
		if err := os.MkdirAll(cacheDir, 0o755); err != nil {
			return nil, err
		}
		tmp, err := os.MkdirTemp(cacheDir, "build-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		if b, err := exec.Command("javac", "-nowarn", "-cp", classpath, "-d", tmp, src).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("zkqueue: javac: %v\n%s", err, b)
		}
		if err := os.Rename(tmp, out); err != nil {
			if _, serr := os.Stat(filepath.Join(out, "ZkQueuePeer.class")); serr != nil {
				return nil, err
			}
		}
	}
	return &Program{argv: []string{"java", "-Xss512k", "-cp", out + ":" + classpath, "ZkQueuePeer"}}, nil
}

// Offer runs the program to offer n items "<tag>-<i>" to dir on server
// (host:port) with DistributedQueue.offer; ready, if not nil, is closed
// once it is connected.
func (p *Program) Offer(ctx context.Context, server, dir string, n int, tag string, ready chan<- struct{}) error {
	_, err := p.run(ctx, ready, server, dir, "offer", strconv.Itoa(n), tag)
	return err
}

// Take runs the program to take n items from dir with
// DistributedQueue.take and returns their data, in the order taken.
func (p *Program) Take(ctx context.Context, server, dir string, n int, ready chan<- struct{}) ([]string, error) {
	return p.run(ctx, ready, server, dir, "take", strconv.Itoa(n))
}

func (p *Program) run(ctx context.Context, ready chan<- struct{}, args ...string) ([]string, error) {
	cmd := exec.CommandContext(ctx, p.argv[0], append(p.argv[1:], args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var items []string
	done := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "READY":
			if ready != nil {
				close(ready)
				ready = nil
			}
		case strings.HasPrefix(line, "ITEM "):
			items = append(items, strings.TrimPrefix(line, "ITEM "))
		case strings.HasPrefix(line, "DONE "):
			done = true
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	if werr != nil || !done {
		return items, fmt.Errorf("zkqueue: %s: %v (finished: %v)\n%s", strings.Join(args, " "), werr, done, stderr.String())
	}
	return items, nil
}
