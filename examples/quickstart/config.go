package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/config"
	"github.com/zkflow/zkflow/task"
)

// configChapter: every worker runs a component with config.Reload, which
// restarts the component on each new version of the configuration
// directory. The admin writes three versions, each in one multi; on the
// embedded server one worker is cut off while a version is written and
// another's session expires, and both still end on the last version.
func configChapter(ctx context.Context, s *story) error {
	root := s.root + "/config"
	if err := s.mkdir(ctx, root); err != nil {
		return err
	}
	write := func(v int) error {
		_, err := executor.AwaitAcrossExpiry(ctx, s.admin.ex, config.Update(root, map[string][]byte{
			"version": []byte(strconv.Itoa(v)), "batch": []byte(strconv.Itoa(10 * v)),
		}))
		return err
	}
	if err := write(1); err != nil {
		return err
	}

	var (
		mu      sync.Mutex
		seen    = map[string][]int{} // versions each worker's runs started with
		active  = map[string]int{}   // runs going now, per worker
		overlap string
		changed = make(chan struct{}, 1)
	)
	for _, w := range s.workers {
		apply := func(snap config.Snapshot) task.Task[task.Unit] {
			return func(sc *task.Scope, k task.Cont[task.Unit]) {
				v, _ := strconv.Atoi(string(snap.Values["version"]))
				mu.Lock()
				seen[w.name] = append(seen[w.name], v)
				active[w.name]++
				if active[w.name] > 1 && overlap == "" {
					overlap = w.name
				}
				mu.Unlock()
				select {
				case changed <- struct{}{}:
				default:
				}
				// The component runs with this configuration until the
				// next version (or the session) ends it.
				task.Suspend(sc, k, func(task.Cont[task.Unit]) func() {
					return func() {
						mu.Lock()
						active[w.name]--
						mu.Unlock()
					}
				})
			}
		}
		if _, err := executor.AwaitAcrossExpiry(ctx, w.ex, config.Reload(root, config.DirOptions{}, apply)); err != nil {
			return err
		}
	}
	// last reports whether every worker's latest run has version v.
	last := func(v int) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, w := range s.workers {
			if vs := seen[w.name]; len(vs) == 0 || vs[len(vs)-1] != v {
				return false
			}
		}
		return true
	}
	waitFor := func(v int) error {
		for !last(v) {
			select {
			case <-changed:
			case <-ctx.Done():
				return fmt.Errorf("workers did not reload version %d: %w", v, ctx.Err())
			}
		}
		s.progress("every worker runs with version %d", v)
		return nil
	}
	if err := waitFor(1); err != nil {
		return err
	}
	const final = 3
	for v := 2; v <= final; v++ {
		if v == 2 {
			s.fault(s.workers[0], "connection drop while the config changes", drop(false))
		}
		if err := write(v); err != nil {
			return err
		}
		if v == 3 {
			s.fault(s.workers[len(s.workers)-1], "session expiry after the config changed", expire)
		}
		if err := waitFor(v); err != nil {
			return err
		}
	}

	mu.Lock()
	defer mu.Unlock()
	ordered := true
	runs := 0
	for _, vs := range seen {
		runs += len(vs)
		for i := 1; i < len(vs); i++ {
			ordered = ordered && vs[i] >= vs[i-1]
		}
	}
	s.check(overlap == "", "config: %d workers reloaded themselves through versions 1..%d (%d runs), never two runs at once", len(s.workers), final, runs)
	s.check(ordered, "config: versions seen by each worker never went back")
	return nil
}
