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
//	c, err := config.NewClient(ex)
//	err = c.Update(ctx, "/app/config", map[string][]byte{"db": []byte("db2:5432"), "pool": []byte("20")}) // all or nothing
//	r, err := c.WatchDir(ctx, "/app/config", config.DirOptions{})
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
// error and the watcher stops in the background).
//
// To compose with other tasks, use the task face: Watch, WatchDir,
// Update, UpdateMarked and Reload return task.Task values to run on an
// executor yourself (a Watcher delivers to a handler on the executor
// goroutine); Client and its Reader run them and wait.
//
// Start with Watch, WatchDir and Reload in a task chain, or Client
// (client.go) for the blocking API. Readers create no node; the option
// WithACL sets the ACL of every node a write creates (task.OpenACL by
// default).
//
// # Reading
//
// Watch follows one node, WatchDir the children of a directory (one level:
// each child is an entry, its data the value). Both are built on the
// caches of recipes/cache and deliver to the user's handler, on the
// executor goroutine, the latest configuration:
//
//  1. read the node (or list the directory and read each entry) with a
//     watch;
//  2. when a watch fires, read again what it names, with a new watch (a
//     watch is a one-time trigger: the notification says that something
//     changed, not what; the value is always re-read, never taken from
//     the event);
//  3. when every notified change has been read, the cache is a consistent
//     snapshot (every entry as of one instant: ZooKeeper delivers a
//     session's notifications before the replies of later changes); if it
//     differs from the last delivered, deliver it;
//  4. on connection loss, a read is retried after the reconnect (a failed
//     read sets no watch); watches already set survive the reconnect of
//     the same session;
//  5. on session expiry, every watch is gone: on the new session
//     everything is read again and the latest configuration is
//     delivered, if it changed meanwhile.
//
// So the final state is never missed: a change made while the client was
// disconnected, or while its session expired, is delivered after the
// reconnect. Versions in between may be skipped; deliveries never go back
// in time.
//
// # Writing: one multi
//
// Update writes several entries in one multi: all or nothing, and a
// WatchDir reader, which delivers only consistent snapshots, sees the old
// configuration or the new one, never a mix. The multi also creates and
// deletes the marker root/invalid, so it fails while a marked update
// (below) holds the marker; Update then waits for the marker to go. On
// connection loss the multi may or may not have been applied: Update
// lists and writes again, which leaves the same values.
//
// # Writing: the invalid marker
//
// Some updates cannot be one multi (too large for one request, or made
// by tools that write one node at a time). UpdateMarked follows the
// invalid-marker protocol:
//
//  1. create root/invalid (persistent), holding a token of the update; if
//     it exists with another token, wait for its deletion and try again;
//     if it exists with ours, the create's reply was lost or the update is
//     resumed: go on;
//  2. write each entry (set, or create if missing);
//  3. delete root/invalid.
//
// Readers that honour the marker (DirOptions.Marker) deliver nothing while
// root/invalid exists, and so never deliver a half-applied update. If the
// writer's session expires midway, the marker stays (it is persistent on
// purpose: a crashed writer must not expose a half-written configuration)
// and UpdateMarked fails with task.ErrSessionExpired; running the same task
// again (executor.AwaitAcrossExpiry) resumes and completes the update. A
// writer that never comes back leaves readers on the last complete
// configuration until an operator deletes the marker or an update
// completes.
//
// # Reloading
//
// Reload runs a component with the latest configuration: apply(snapshot)
// is a task that runs as long as the component does, in a scope of its
// own. On a new version the running run's scope is canceled with
// ErrReloaded, and once its task has ended the next run starts with the
// latest version, so two runs never overlap. A run ended by session expiry
// is started again with the latest configuration on the new session.
//
// # Faults
//
// The only node the package owns is the marker, and it is persistent: it
// outlives the session of the writer that made it.
//
//   - Pause past the session timeout: a marked writer keeps the marker
//     while frozen, so readers keep the last complete configuration and
//     other writers wait (Update's multi creates the marker too); once it
//     hears of the expiry the task fails with task.ErrSessionExpired, and
//     running the same task again finishes the update. A reader runs on
//     with what it delivered until it hears of the expiry, then reads
//     everything again on the new session and delivers the latest.
//   - Crash and restart: a marked writer that dies leaves the marker, and
//     a new process's UpdateMarked waits, as every Update does, until an
//     operator deletes it. Its token carries its session's id beside a
//     draw from the executor's seeded source, so a new process (a new
//     session), even with the same seed, never takes the dead writer's
//     marker for its own (TestMarkedUpdateAfterCrashDoesNotTakeDeadWritersMarker).
//   - A lost reply to the final delete of the marker: the delete is not
//     sent again blindly; the marker is read and deleted only if it still
//     holds our token, in the incarnation read, so the marker of a writer
//     that came in since stays (TestMarkerDeleteLostReplyKeepsNextWritersMarker).
//   - Operator: a marker deleted by hand exposes a half-applied update to
//     readers and lets other writers in; one created by hand holds readers
//     and writers back until it is deleted (a writer whose token it holds
//     takes it for its own). An entry edited by hand is a configuration
//     change, delivered as any other.
//
// Of these three classes the config scenario (sim_test.go) takes the pause
// only: the marker of a writer that dies is left for an operator to
// delete, which the workload would have to play, and its judge
// assumes whole generations, which a hand edit breaks by design. Under
// pauses it judges that no delivered snapshot is half applied, that
// deliveries never go back, that Reloader runs never overlap, and that
// every reader ends at the server's state.
//
// # Errors
//
// Bad input (invalid paths, entry names with "/" or named "invalid", no
// values, nil handlers, a nil executor) fails with task.ErrInvalidPath or
// task.ErrInvalidArgument before anything is sent. A missing root fails an
// update with task.ErrNoNode; a reader of a missing node or directory
// delivers it as not existing and follows its creation. A watcher ends
// (Err, Done) on Stop, on the executor's close (task.ErrClosed), or on an
// error no retry settles.
package config
