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
// lower node, and when it goes (or if it is gone already, or another user
// of the session removes the watch) list again. If
// the create's reply is lost, our node is the one whose name has our
// guid, listed after a sync. It returns our node: the lock is held while
// it exists.
//
// A Lock that fails (its deadline passes or its flow is canceled while it
// waits, an operation fails) leaves no node behind: a node left would
// stand ahead of the next Lock of the same session, which would wait
// behind it for as long as the session lives. Its deferred cleanup
// (abandon) deletes our node or, when a create's reply never came, the
// node with our guid if that create was applied.
func Lock(f *task.F, dir string) (_ string, err error) {
	guid := fmt.Sprintf("%x-%016x-lock-", f.Scope().Session().ID, f.Scope().Rand())
	node, sent := "", false // sent: a create was awaited, and may have been applied
	defer func() {
		if err != nil && sent {
			abandon(f, dir, guid, node)
		}
	}()
	for node == "" {
		sent = true
		name, err := task.Await(f, task.Create(dir+"/"+guid, nil, task.EphemeralSequential))
		if node = name; err != nil && !lost(err) {
			return "", err
		}
		if err != nil { // the create may have been applied: look for our guid
			if node, err = findOwn(f, dir, guid); err != nil {
				return "", err
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
			// A watch another user of the session took away
			// (RemoveWatches: a cache of the node stopping) is a wake-up
			// like any other: list again, which watches again.
			if _, err := task.Await(f, w.Watch.Wait()); err != nil && !errors.Is(err, task.ErrWatchRemoved) {
				return "", err
			}
		}
	}
}

// findOwn returns the node in dir whose name has guid, or "" if there is
// none. A sync first: the session may have come back through a member
// that has not applied our create yet, and a listing there would miss our
// node (Lock would make a second one and wait behind its own first).
func findOwn(f *task.F, dir, guid string) (string, error) {
	if _, err := retry(f, task.Sync(dir)); err != nil {
		return "", err
	}
	kids, err := retry(f, task.Children(dir))
	if err != nil {
		return "", err
	}
	if i := slices.IndexFunc(kids.Names, func(n string) bool { return strings.HasPrefix(n, guid) }); i >= 0 {
		return dir + "/" + kids.Names[i], nil
	}
	return "", nil
}

// Unlock deletes our node. If the body's scope has ended (a deadline, a
// cancel: its Awaits fail at once), the delete is left to a flow of its
// own (abandon), so that the node does not stay.
func Unlock(f *task.F, node string) error {
	_, err := retry(f, task.Delete(node, -1))
	if errors.Is(err, task.ErrNoNode) {
		return nil // deleted by a try whose reply was lost
	}
	if err != nil && f.Scope().Err() != nil {
		abandon(f, "", "", node)
	}
	return err
}

// abandon deletes node or, if node is "", the node in dir whose name has
// guid, if there is one: what a Lock that failed (or an Unlock whose scope
// ended) leaves. It cannot await in the body that calls it: once the
// body's scope has ended, every Await there returns the scope's error at
// once, and nothing awaited in it starts (task/FLOWS.md). So the delete
// is a flow of its own, started with task.Go: bound to the session, to no
// deadline, its error reported to the executor's Config.OnError, as the
// recipes' cleanups are. If the session has ended, our node went with it.
func abandon(f *task.F, dir, guid, node string) {
	task.Go(f.Scope(), task.Flow(func(f *task.F) (task.Unit, error) {
		if node == "" {
			var err error
			if node, err = findOwn(f, dir, guid); node == "" || errors.Is(err, task.ErrNoNode) {
				return task.Unit{}, nil // never created, or dir is gone
			} else if err != nil {
				return task.Unit{}, err
			}
		}
		return task.Unit{}, Unlock(f, node)
	}), nil)
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
