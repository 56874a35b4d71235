package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/zkflow/zkflow/recipes/idpersist"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// idsChapter: three persistence replicas elect a leader that keeps the
// reserved limit durable; the workers draw IDs through it. A quarter of
// the way in, the leader is killed and a backup takes over; on the
// embedded server a worker's connection drops and another's session
// expires on the way.
func idsChapter(ctx context.Context, s *story) error {
	dir, err := os.MkdirTemp("", "quickstart-ids")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := idpersist.NewFileStore(filepath.Join(dir, "ids.mark"))
	if err != nil {
		return err
	}
	base := s.root + "/ids"
	if err := s.mkdir(ctx, base); err != nil {
		return err
	}
	cfg := idpersist.Config{Sequence: base + "/seq", Limit: base + "/limit", Election: base + "/election",
		Store: store, Chunk: 20, LowWater: 8}

	type replica struct {
		c *process
		r *idpersist.Replica
	}
	var replicas []replica
	var running sync.WaitGroup
	defer running.Wait()
	rctx, stopReplicas := context.WithCancel(ctx)
	defer stopReplicas()
	for i := range 3 {
		c, err := s.connect(ctx, fmt.Sprintf("replica-%d", i+1))
		if err != nil {
			return err
		}
		r, err := idpersist.NewReplica(cfg)
		if err != nil {
			return err
		}
		replicas = append(replicas, replica{c, r})
		running.Add(1)
		go func() { defer running.Done(); _ = r.Serve(rctx, c.ex) }()
	}

	total := len(s.workers) * s.o.ids
	var (
		mu     sync.Mutex
		drawn  int
		killed = -1
		step   int
		before []int64 // each replica's leader turns when the leader was killed
	)
	// after runs after each ID: progress, and the next scripted event once
	// the run passes its share of IDs.
	after := func() {
		mu.Lock()
		defer mu.Unlock()
		drawn++
		if drawn%(total/4+1) == 0 {
			s.progress("%d/%d IDs", drawn, total)
		}
		switch {
		case step == 0 && drawn >= total/4:
			for i, r := range replicas {
				if r.r.Leading() {
					s.progress("killing the leading replica, %s", r.c.name)
					for _, r := range replicas {
						before = append(before, r.r.Turns())
					}
					r.c.stop()
					killed = i
					step++
					break
				}
			}
		case step == 1 && drawn >= total/2:
			s.fault(s.workers[0], "connection drop", drop(true))
			step++
		case step == 2 && drawn >= 3*total/4:
			s.fault(s.workers[1], "session expiry", expire)
			step++
		}
	}

	got := make([][]int64, len(s.workers))
	err = s.eachWorker(func(i int, w *process) error {
		g, err := idpersist.NewClient(w.ex, cfg)
		if err != nil {
			return err
		}
		for len(got[i]) < s.o.ids {
			id, err := g.Next(ctx)
			if errors.Is(err, task.ErrSessionExpired) {
				continue // the session was replaced: draw again on the new one
			}
			if err != nil {
				return err
			}
			got[i] = append(got[i], id)
			after()
		}
		return nil
	})
	if err != nil {
		return err
	}

	seen := map[int64]int{}
	var hi int64
	dup := ""
	for wi, ids := range got {
		for _, id := range ids {
			if prev, ok := seen[id]; ok && dup == "" {
				dup = fmt.Sprintf("ID %d drawn by %s and %s", id, s.workers[prev].name, s.workers[wi].name)
			}
			seen[id] = wi
			hi = max(hi, id)
		}
	}
	s.check(dup == "", "IDs issued: %d, none repeated%s (highest %d, %s)", total, dupNote(dup), hi, seqid.Hex(hi))
	mark, err := store.Load()
	if err != nil {
		return err
	}
	s.check(mark >= hi, "durable high-water mark %d >= every ID issued", mark)
	takeovers := 0
	for i, r := range replicas {
		if killed >= 0 && i != killed && r.r.Turns() > before[i] {
			takeovers++
		}
	}
	s.check(killed >= 0 && takeovers > 0, "persistence leader killed (replica-%d) and a backup took over", killed+1)
	return nil
}

func dupNote(dup string) string {
	if dup == "" {
		return ""
	}
	return ": " + dup
}
