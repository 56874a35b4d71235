package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zkflow/zkflow/task"
)

// ErrNodeGone says our lock node was deleted (by someone else: an
// expired session fails with task.ErrSessionExpired) while we waited.
var ErrNodeGone = errors.New("our lock node has gone")

// Lock takes the lock on dir, ZooKeeper's lock recipe as its prose says
// it: create an ephemeral sequential node dir/<guid>-lock-; list dir; if
// our node is the lowest, we hold the lock; otherwise watch the next
// lower node, and when it goes (or if it is gone already) list again. If
// the create's reply is lost, our node is the one whose name has our
// guid, listed after a sync. It returns our node: the lock is held while
// it exists.
func Lock(f *task.F, dir string) (string, error) {
	guid := fmt.Sprintf("%x-%016x-lock-", f.Scope().Session().ID, f.Scope().Rand())
	node := ""
	for node == "" {
		name, err := task.Await(f, task.Create(dir+"/"+guid, nil, task.EphemeralSequential))
		if node = name; err != nil && !lost(err) {
			return "", err
		}
		if err != nil { // the create may have been applied: look for our guid
			// A sync first: the session may have come back through a
			// member that has not applied the create yet, and a listing
			// there would miss our node (we would make a second one and
			// wait behind our own first).
			if _, err := retry(f, task.Sync(dir)); err != nil {
				return "", err
			}
			kids, err := retry(f, task.Children(dir))
			if err != nil {
				return "", err
			}
			if i := slices.IndexFunc(kids.Names, func(n string) bool { return strings.HasPrefix(n, guid) }); i >= 0 {
				node = dir + "/" + kids.Names[i]
			}
		}
	}
	for {
		kids, err := retry(f, task.Children(dir))
		if err != nil {
			return "", err
		}
		slices.SortFunc(kids.Names, func(a, b string) int { return strings.Compare(seq(a), seq(b)) })
		i := slices.Index(kids.Names, node[len(dir)+1:])
		switch {
		case i < 0:
			return "", fmt.Errorf("lock %s: %s: %w", dir, node, ErrNodeGone)
		case i == 0:
			return node, nil
		}
		w, err := retry(f, task.ExistsW(dir+"/"+kids.Names[i-1]))
		if err != nil {
			return "", err
		}
		if w.Stat != nil {
			if _, err := task.Await(f, w.Watch.Wait()); err != nil {
				return "", err
			}
		}
	}
}

// Unlock deletes our node.
func Unlock(f *task.F, node string) error {
	_, err := retry(f, task.Delete(node, -1))
	if errors.Is(err, task.ErrNoNode) {
		return nil // deleted by a try whose reply was lost
	}
	return err
}

// seq is a sequential node's sequence number, its last 10 digits (a
// name too short to have them sorts first, as if it held the lock).
func seq(name string) string { return name[max(len(name)-10, 0):] }

// retry awaits t, again while its outcome is unknown (a read, or a write
// that is safe to repeat).
func retry[T any](f *task.F, t task.Task[T]) (T, error) {
	for {
		v, err := task.Await(f, t)
		if !lost(err) {
			return v, err
		}
	}
}

func lost(err error) bool {
	return errors.Is(err, task.ErrConnectionLoss) || errors.Is(err, task.ErrNotSent)
}
