package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// setup installs ZooKeeper, a JDK, Curator and kazoo when missing, with the
// project's own script (.ci/install-deps with BENCH_PEERS=1, what make
// bench-deps runs): apt-get, as root or through sudo.
func setup(ctx context.Context, w io.Writer) error {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return errors.New("-setup: source tree not found")
	}
	script := filepath.Join(filepath.Dir(file), "..", ".ci", "install-deps")
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("-setup: %w", err)
	}
	cmd := exec.CommandContext(ctx, script)
	cmd.Env = append(os.Environ(), "BENCH_PEERS=1")
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("-setup: %s: %w", script, err)
	}
	return nil
}
