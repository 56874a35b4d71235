// Package config delivers configuration kept in ZooKeeper to the code
// that uses it, and writes it atomically. Curator has no such recipe (its
// NodeCache plus writes do the job); kazoo's DataWatch is the nearest.
//
// The final state is never missed: a change made while the client was
// disconnected, or while its session expired, is delivered after the
// reconnect. Versions in between may be skipped; deliveries never go back
// in time. Update writes several entries in one multi: all or nothing,
// and a WatchDir reader sees the old configuration or the new one, never
// a mix. UpdateMarked writes what cannot be one multi under the
// invalid-marker protocol, and readers that honour the marker never
// deliver a half-applied update. Reload restarts a component on each new
// version, and two runs never overlap.
//
//	c, err := config.NewClient(ex, "/app/config")
//	err = c.Update(ctx, map[string][]byte{"db": []byte("db2:5432"), "pool": []byte("20")}) // all or nothing
//	r, err := c.WatchDir(ctx, config.DirOptions{})
//	if err != nil {
//		return err
//	}
//	defer r.Stop(ctx)
//	for s, err := r.Next(ctx); err == nil; s, err = r.Next(ctx) {
//		apply(s.Values) // the latest whole configuration, never an older one
//	}
//
// Stop is started whatever its ctx, so the deferred Stop above stops the
// watcher also when the loop ended with ctx (Stop then returns ctx's
// error and the watcher stops in the background; a failure there goes
// to the executor's Config.OnError, to log or count).
//
// To compose with other tasks, use the task face: Watch, WatchDir,
// Update, UpdateMarked and Reload return task.Task values to run on an
// executor yourself (a Watcher delivers to a handler on the executor
// goroutine); Client and its Reader run them and wait.
// Readers create no node; the option WithACL sets the ACL of every node a
// write creates (task.OpenACL by default).
//
// # The invalid marker
//
// Update's multi creates and deletes the marker root/invalid, so it waits
// while a marked update holds it. UpdateMarked, for updates that cannot
// be one multi, creates the marker, writes each entry and deletes the
// marker; readers that honour it (DirOptions.Marker) deliver nothing while
// it exists. If the writer's session expires midway, the marker stays (a
// crashed writer must not expose a half-written configuration) and
// UpdateMarked fails with task.ErrSessionExpired: running the same task
// again (executor.AwaitAcrossExpiry) resumes and completes the update. A
// writer that never comes back leaves readers on the last complete
// configuration, and other writers waiting, until an operator deletes the
// marker. A write refused for good (an entry over the data limit) is
// rolled back (the entries written get back the values they had, the
// marker goes) and UpdateMarked fails with its error; a write an
// operator's ACL refuses is tried again until the ACL lets it.
//
// # Errors
//
// Bad input (invalid paths, entry names with "/" or named "invalid", no
// values, nil handlers, a nil executor, a nil ctx: executor.ErrNilContext)
// fails with task.ErrInvalidPath or task.ErrInvalidArgument before
// anything is sent. An update creates a missing root (and its
// ancestors); a reader of a missing node or directory
// delivers it as not existing and follows its creation. A watcher ends
// (Err, Done) on Stop, on the executor's close (task.ErrClosed), or on an
// error no retry settles. A Reload run is canceled with ErrReloaded when a
// new version comes.
//
// How readers follow the nodes, both write protocols, Reload and the
// fault table: recipes/config/PROTOCOL.md.
package config
