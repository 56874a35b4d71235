package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// bugMarkerAnyToken, a known bug switched on by tests only
// (internal/canary): UpdateMarked takes a marker it finds for its own
// whatever its token, so a second marked writer writes its entries while
// the first writes its own, and deletes the first's marker under it.
const bugMarkerAnyToken canary.Name = "config/marker-any-token"

// bugMarkedRewrite: UpdateMarked run again after its session expired
// while it deleted its marker writes its entries again even when the
// delete was applied, undoing the updates other writers made since.
const bugMarkedRewrite canary.Name = "config/marked-rewrite"

// bugDeleteMarkerWithoutSync, a known bug switched on by tests only: a
// resumed UpdateMarked reads its marker without a sync, and a server that
// lags tells it the marker is gone when it is not.
const bugDeleteMarkerWithoutSync canary.Name = "config/delete-marker-without-sync"

// bugUpdateLossAsApplied: Update takes a multi whose reply the
// connection's loss took for applied, and succeeds, when it may not have
// been: the caller is told of an update the server never made.
const bugUpdateLossAsApplied canary.Name = "config/update-loss-as-applied"

// bugMarkedNoRollback: UpdateMarked whose write is refused for good (the
// data over the limit) fails with the marker standing, as it once did:
// every later update waits for it for good.
const bugMarkedNoRollback canary.Name = "config/marked-no-rollback"

// retry repeats an operation whose outcome a retry settles (connection
// loss, not sent); the retry waits for the reconnect.
var retry = c.Policy{Backoff: c.Backoff{Initial: 10 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.5}}

// validate checks root and the entry names of an update.
func validate(root string, values map[string][]byte) error {
	if err := task.ValidatePath(root, false); err != nil {
		return fmt.Errorf("config: root: %w", err)
	}
	if len(values) == 0 {
		return fmt.Errorf("config: update of %s with no values: %w", root, task.ErrInvalidArgument)
	}
	for name := range values {
		if name == "" || strings.Contains(name, "/") || name == MarkerName {
			return fmt.Errorf("config: entry name %q: %w", name, task.ErrInvalidPath)
		}
		if err := task.ValidatePath(task.Join(root, name), false); err != nil {
			return fmt.Errorf("config: entry name %q: %w", name, err)
		}
	}
	return nil
}

// Update returns a task that sets root's entries to values in one multi:
// every entry is written, or none. Entries that do not exist are created
// (and root with its ancestors, persistent, if missing); entries not in
// values are left alone. The multi also
// creates and deletes root/invalid, so it fails at once if an update made
// one write at a time (UpdateMarked) holds the marker; Update then waits
// for the marker to go and tries again.
//
// Errors: connection loss (the multi may or may not have been applied):
// Update lists and writes again, which leaves the same values (if
// another writer's update came in between an applied multi and its
// retry, the retry writes these values over it: the last multi wins).
// An entry created or deleted by someone else meanwhile (node exists, no
// node): it lists and writes again. Session expiry: task.ErrSessionExpired (run it
// again on the next session: executor.AwaitAcrossExpiry). Invalid names or no
// values: task.ErrInvalidPath or task.ErrInvalidArgument, before anything
// is sent. Other errors end the task. WithACL sets the ACL of the nodes
// it creates.
func Update(root string, values map[string][]byte, opts ...Option) task.Task[task.Unit] {
	if err := validate(root, values); err != nil {
		return task.Fail[task.Unit](err)
	}
	o, err := newOptions(opts)
	if err != nil {
		return task.Fail[task.Unit](err)
	}
	acl := o.acl
	values = maps.Clone(values)
	marker := task.Join(root, MarkerName)
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		var attempt func()
		attempt = func() {
			task.Run(s, c.Retry(task.Children(root), retry), func(cl task.ChildList, err error) {
				if errors.Is(err, task.ErrNoNode) {
					ensure(s, root, acl, attempt, k) // no root yet: create it, as the other recipes do
					return
				}
				if err != nil {
					k(task.Unit{}, err)
					return
				}
				if slices.Contains(cl.Names, MarkerName) {
					waitGone(s, marker, attempt, k)
					return
				}
				ops := []task.MultiOp{&task.CreateRequest{Path: marker, ACL: acl.For(marker)}}
				for _, name := range slices.Sorted(maps.Keys(values)) {
					p := task.Join(root, name)
					if slices.Contains(cl.Names, name) {
						ops = append(ops, &task.SetDataRequest{Path: p, Data: values[name], Version: task.AnyVersion})
					} else {
						ops = append(ops, &task.CreateRequest{Path: p, Data: values[name], ACL: acl.For(p)})
					}
				}
				ops = append(ops, &task.DeleteRequest{Path: marker, Version: task.AnyVersion})
				task.Run(s, task.Multi(ops...), func(_ []task.MultiResult, err error) {
					if err == nil {
						k(task.Unit{}, nil)
						return
					}
					var me *task.MultiError
					switch {
					case errors.Is(err, task.ErrConnectionLoss) && canary.On(bugUpdateLossAsApplied):
						k(task.Unit{}, nil)
					case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrNotSent):
						attempt() // applied or not: writing again leaves the same values
					case errors.As(err, &me) && me.Index == 0 && errors.Is(err, task.ErrNodeExists):
						waitGone(s, marker, attempt, k) // a marked update is under way
					case errors.Is(err, task.ErrNodeExists), errors.Is(err, task.ErrNoNode):
						attempt() // an entry, or root, came or went meanwhile
					default:
						k(task.Unit{}, err)
					}
				})
			})
		}
		attempt()
	}
}

// ensure creates root and its missing ancestors (persistent, with acl's
// ACL), then calls then.
func ensure(s *task.Scope, root string, acl task.ACLProvider, then func(), k task.Cont[task.Unit]) {
	task.Run(s, zkops.EnsurePath(root, acl), func(_ task.Unit, err error) {
		if err != nil {
			k(task.Unit{}, err)
			return
		}
		then()
	})
}

// waitGone waits until path does not exist, then calls then. A watch
// another user of the session takes away (task.RemoveWatches of type Any:
// a recursive cache of the path stopping) is one more wake-up: it checks
// again with a new watch.
func waitGone(s *task.Scope, path string, then func(), k task.Cont[task.Unit]) {
	task.Run(s, c.Retry(task.ExistsW(path), retry), func(sw task.StatWatch, err error) {
		switch {
		case err != nil:
			k(task.Unit{}, err)
		case sw.Stat == nil:
			then()
		default:
			task.Run(s, sw.Watch.Wait(), func(_ task.Event, err error) {
				if err != nil && !errors.Is(err, task.ErrWatchRemoved) {
					k(task.Unit{}, err)
					return
				}
				waitGone(s, path, then, k)
			})
		}
	})
}

// UpdateMarked returns a task that writes root's entries one at a time
// under the invalid-marker protocol, for writers that cannot use one
// multi (too many entries for one request, or writes spread over time):
//
//  1. create root/invalid (persistent, holding a token of this update);
//     if it exists with another token, wait until it is deleted and try
//     again: one marked update at a time;
//  2. write each entry (set, or create if missing), in name order, each
//     read first (its value in the configuration the update replaces);
//  3. delete root/invalid.
//
// A write refused for good (the data over the connection's limit,
// task.ErrDataTooLarge, an invalid ACL) is rolled back: the entries
// written are given the values read in step 2 again (those that did not
// exist are deleted), the marker is deleted, and the task fails with the
// write's error: the update is not applied, and readers go on with the
// configuration it would have replaced. A write an operator's ACL refuses
// (task.ErrNoAuth) is tried again every task.RecheckAfter until the ACL
// lets it, the marker standing meanwhile.
//
// Readers that honour the marker (DirOptions.Marker) deliver nothing
// between 1 and 3, so they never see the update half applied. The marker
// is persistent on purpose: if the writer dies between 1 and 3, readers
// keep the last complete configuration instead of a half-written one,
// until an update completes (running the same task again resumes: it
// recognises its own marker by the token) or an operator deletes the
// marker. A run after every entry was written only deletes the marker,
// if it is still ours: if the delete was applied before the session
// expired, the update is complete, and is not written again over the
// updates made since.
//
// Errors: connection loss on any step: the step is retried (a create of
// the marker whose reply was lost is recognised by its token). Session
// expiry: the task fails with task.ErrSessionExpired, leaving the marker;
// run the same task again (executor.AwaitAcrossExpiry) to finish. The
// executor's close: task.ErrClosed, the marker left as on an expiry (the
// same task run on another executor finishes). A
// missing root is created first, with its ancestors. The token is drawn
// when the task first runs and kept by the task value: run one task value
// at most once at a time (two runs at once would both take the marker for
// theirs), and build a new task for each update. WithACL sets the ACL of
// the nodes it creates.
func UpdateMarked(root string, values map[string][]byte, opts ...Option) task.Task[task.Unit] {
	if err := validate(root, values); err != nil {
		return task.Fail[task.Unit](err)
	}
	o, err := newOptions(opts)
	if err != nil {
		return task.Fail[task.Unit](err)
	}
	acl := o.acl
	values = maps.Clone(values)
	marker := task.Join(root, MarkerName)
	var token []byte // drawn at the first run; later runs resume with it
	// written: every entry is written, the marker's delete is under way. A
	// later run only deletes the marker if it is still ours: if it is
	// gone, the delete was applied and the update is complete, and
	// writing the entries again would undo the updates made since.
	var written bool
	// prior: each entry's value read just before its first write (absent
	// from the map: the entry did not exist; read: which were read), for
	// a rollback. Kept by the task value, as the token is: a run resumed
	// does not read again what it may have written already.
	prior, read := map[string][]byte{}, map[string]bool{}
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if token == nil {
			// The session's id as well as a draw: a process restarted
			// with the same executor seed draws the same numbers, and
			// must not take a dead writer's marker for its own.
			token = fmt.Appendf(nil, "update-%016x-%016x", uint64(s.Session().ID), s.Rand())
		}
		var lock func()
		names := slices.Sorted(maps.Keys(values))
		write := func() {
			var step func(i int)
			step = func(i int) {
				if i == len(names) {
					written = true
					task.Run(s, zkops.UntilAllowed(deleteMarker(marker, token)), k)
					return
				}
				if !read[names[i]] {
					task.Run(s, readPrior(task.Join(root, names[i])), func(v []byte, err error) {
						switch {
						case errors.Is(err, task.ErrNoNode):
						case err != nil:
							k(task.Unit{}, err)
							return
						default:
							prior[names[i]] = v
						}
						read[names[i]] = true
						step(i)
					})
					return
				}
				task.Run(s, zkops.UntilAllowed(put(task.Join(root, names[i]), values[names[i]], acl)), func(_ task.Unit, err error) {
					switch {
					case err == nil:
						step(i + 1)
					case refusedForGood(err) && s.Err() == nil && !canary.On(bugMarkedNoRollback):
						task.Run(s, rollback(root, names[:i], prior, acl), func(_ task.Unit, rerr error) {
							if rerr != nil {
								k(task.Unit{}, rerr) // the marker stands: run the task again
								return
							}
							task.Run(s, zkops.UntilAllowed(deleteMarker(marker, token)), func(_ task.Unit, derr error) {
								if derr != nil {
									k(task.Unit{}, derr)
									return
								}
								k(task.Unit{}, fmt.Errorf("config: update of %s rolled back, entry %s refused: %w", root, names[i], err))
							})
						})
					default:
						k(task.Unit{}, err)
					}
				})
			}
			step(0)
		}
		taken := write
		lock = func() {
			create := c.Retry(zkops.Create(marker, token, task.Persistent, acl), retry)
			task.Run(s, create, func(_ string, err error) {
				switch {
				case err == nil:
					taken()
				case errors.Is(err, task.ErrNoNode):
					ensure(s, root, acl, lock, k) // no root yet: create it, as the other recipes do
				case errors.Is(err, task.ErrNodeExists):
					task.Run(s, c.Retry(task.Get(marker), retry), func(d task.Data, err error) {
						switch {
						case errors.Is(err, task.ErrNoNode):
							lock()
						case err != nil:
							k(task.Unit{}, err)
						case bytes.Equal(d.Data, token) || canary.On(bugMarkerAnyToken):
							taken() // ours: a lost reply, or a run resumed
						default:
							waitGone(s, marker, lock, k)
						}
					})
				default:
					k(task.Unit{}, err)
				}
			})
		}
		if written && !canary.On(bugMarkedRewrite) {
			task.Run(s, deleteMarker(marker, token), k)
			return
		}
		lock()
	}
}

// refusedForGood reports whether a write's error says it was not applied
// and never will be, whatever is tried again: refused before it was sent
// (task.ErrDataTooLarge, an invalid path or argument) or by the server
// for its content (an invalid ACL). Not connection loss, an expiry, the
// scope's end or an ACL's refusal, which pass.
func refusedForGood(err error) bool {
	return errors.Is(err, task.ErrDataTooLarge) || errors.Is(err, task.ErrInvalidACL) ||
		errors.Is(err, task.ErrBadArguments) || errors.Is(err, task.ErrInvalidArgument) || errors.Is(err, task.ErrInvalidPath)
}

// readPrior reads the value of the entry at path before the update
// writes it (task.ErrNoNode: it does not exist). An operator's ACL that
// refuses the read for a while is waited out, as the writes are: the
// marker stands meanwhile.
func readPrior(path string) task.Task[[]byte] {
	return task.Flow(func(f *task.F) ([]byte, error) {
		for {
			d, err := task.Await(f, c.Retry(task.Get(path), retry))
			if !errors.Is(err, task.ErrNoAuth) {
				return d.Data, err
			}
			if _, err := task.Await(f, c.Sleep(task.RecheckAfter(f.Scope().Session().Timeout))); err != nil {
				return nil, err
			}
		}
	})
}

// rollback gives root's entries of names their prior values again, and
// deletes those that had none.
func rollback(root string, names []string, prior map[string][]byte, acl task.ACLProvider) task.Task[task.Unit] {
	return task.Flow(func(f *task.F) (task.Unit, error) {
		for _, n := range names {
			path := task.Join(root, n)
			restore := zkops.Delete(path)
			if v, ok := prior[n]; ok {
				restore = put(path, v, acl)
			}
			if _, err := task.Await(f, zkops.UntilAllowed(restore)); err != nil {
				return task.Unit{}, err
			}
		}
		return task.Unit{}, nil
	})
}

// deleteMarker deletes the marker if it holds token, in the incarnation
// read (zkops.DeleteNode): after a lost reply, the marker another writer
// created since is left alone, its update under way. A marker already
// gone is success. The read follows a sync: "gone" must mean gone at the
// leader, not on a server that lags behind it and has not applied our
// create yet (a run resumed on a new session or process would take the
// marker for deleted and leave it, holding every update back for good).
func deleteMarker(marker string, token []byte) task.Task[task.Unit] {
	get := zkops.AfterSync(marker, task.Get(marker))
	if canary.On(bugDeleteMarkerWithoutSync) {
		get = task.Get(marker)
	}
	read := c.Catch(c.Retry(get, retry), func(err error) task.Task[task.Data] {
		if errors.Is(err, task.ErrNoNode) {
			return task.Value(task.Data{})
		}
		return task.Fail[task.Data](err)
	})
	return c.Then(read, func(d task.Data) task.Task[task.Unit] {
		if d.Stat.Czxid == 0 || !bytes.Equal(d.Data, token) {
			return task.Done // gone (our delete applied), or another writer's
		}
		return zkops.DeleteNode(marker, d.Stat)
	})
}

// put sets path to data, creating it with acl's ACL if missing (and
// setting it again if another writer created it first). A flow: the
// loop as it reads (BenchmarkPut compares it with the continuation form).
func put(path string, data []byte, acl task.ACLProvider) task.Task[task.Unit] {
	return task.Flow(func(f *task.F) (task.Unit, error) {
		for {
			_, err := task.Await(f, c.Retry(task.Set(path, data, task.AnyVersion), retry))
			if !errors.Is(err, task.ErrNoNode) {
				return task.Unit{}, err
			}
			_, err = task.Await(f, c.Retry(zkops.Create(path, data, task.Persistent, acl), retry))
			if !errors.Is(err, task.ErrNodeExists) {
				return task.Unit{}, err
			}
		}
	})
}
