package idpersist

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/blocking"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// candidatePrefix starts every candidate's name; the session id and a
// random token follow, so a create whose reply was lost is found again by
// listing.
const candidatePrefix = "c-"

// Replica is one persister replica: it runs for election and, while it
// leads, keeps the limit reserved and durable. Run it with Run (blocking)
// or its task with Task.
type Replica struct {
	cfg     Config
	leading atomic.Bool
	turns   atomic.Int64
}

// NewReplica checks cfg and returns a replica.
func NewReplica(cfg Config) (*Replica, error) {
	cfg, err := cfg.withDefaults(true)
	if err != nil {
		return nil, err
	}
	return &Replica{cfg: cfg}, nil
}

// Leading reports whether the replica is leading now (safe from any
// goroutine; for monitoring and tests).
func (r *Replica) Leading() bool { return r != nil && r.leading.Load() }

// Turns counts the times the replica became leader.
func (r *Replica) Turns() int64 {
	if r == nil {
		return 0
	}
	return r.turns.Load()
}

// zero reports a Replica not made by NewReplica (nil, or a zero value).
func (r *Replica) zero() bool { return r == nil || r.cfg.Election == "" }

// errZeroReplica is the error of a nil or zero Replica's Run and Serve.
var errZeroReplica = fmt.Errorf("%w: nil or zero Replica (not made by NewReplica)", ErrConfig)

// Serve runs the replica on ex until ctx ends (the blocking face of
// Run); after a session expiry it
// runs for election again with a new candidate on the new session. It
// returns ctx's error as task.ErrCanceled/ErrDeadlineExceeded, or the
// first error that is neither expiry nor a lost leadership; a nil ctx is
// refused (executor.ErrNilContext), nothing run.
func (r *Replica) Serve(ctx context.Context, ex *executor.Executor) error {
	if r.zero() {
		return errZeroReplica
	}
	if ctx == nil {
		return blocking.CtxErr(ctx, "idpersist: serve")
	}
	for {
		_, err := executor.Await(ctx, ex, r.Run())
		again := errors.Is(err, task.ErrSessionExpired) || errors.Is(err, ErrDeposed)
		if ctx.Err() != nil && again && !canary.On(bugServeEndedOther) {
			// ctx ended as the expiry or the deposition ended the flow
			// (canceled by the report of the expiry, or a goroutine
			// that ran late and found both): its end is the answer,
			// not an error Serve promises its caller never sees.
			return blocking.CtxErr(ctx, "idpersist: serve")
		}
		if ctx.Err() != nil || !again {
			return err
		}
	}
}

// Run returns the replica's flow on the current session: create a
// candidate, wait to be the lowest, lead; after a suspension, check again
// and lead again. It ends only with an error: ErrSessionExpired (run it
// again on the new session), ErrDeposed (candidate deleted: run again), or
// a failure of the Store or of the nodes' data.
//
// However it ends, a flow of its own then withdraws the candidate (every
// node with its token that its session owns: a create whose reply was
// lost included), unless that session has ended and taken it: a replica
// stopped by its caller's deadline or cancel, its session living on, must
// not hold the election up until the session ends. A withdrawal an
// operator's ACL refuses is tried again every twice the session timeout
// until the ACL lets it.
func (r *Replica) Run() task.Task[task.Unit] {
	if r.zero() {
		return task.Fail[task.Unit](errZeroReplica)
	}
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		sess := s.Session()
		token := fmt.Sprintf("%s%016x-%016x-", candidatePrefix, uint64(sess.ID), s.Rand())
		sc := s.Child()
		// A withdrawal an operator's ACL refuses (the directory closed:
		// its listing; a candidate's delete) goes on in the background
		// until allowed (zkops.Refusable, zkops.KeepDeleting): the old
		// candidate would otherwise hold the election up until its
		// session ends.
		sc.Defer(zkops.Refusable(withdraw(r.cfg.Election, token, sess)))
		task.RunIn(sc, c.Then(r.candidate(token), func(me string) task.Task[task.Unit] {
			return c.Loop(task.Unit{}, func(task.Unit) bool { return true }, func(task.Unit) task.Task[task.Unit] {
				return c.Then(r.awaitTurn(me), func(task.Unit) task.Task[task.Unit] {
					return c.OnError(r.lead(me), func(error) task.Task[task.Unit] { return task.Done }, errSuspended)
				})
			})
		}), k)
	}
}

// withdraw deletes the candidates named with token that session sess
// owns (zkops.Owned; each in the incarnation read, zkops.DeleteNode). On
// another session than sess there is nothing to do: sess ended and took
// its ephemeral nodes.
func withdraw(dir, token string, sess task.Session) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if s.Session().Epoch != sess.Epoch {
			k(task.Unit{}, nil)
			return
		}
		task.Run(s, zkops.Owned(dir, token, sess.ID), func(ms []zkops.Match, err error) {
			if err != nil {
				task.Run(s, zkops.GoneOK(err), k)
				return
			}
			del := task.Done
			for _, m := range ms {
				del = c.Seq(del, zkops.DeleteNode(dir+"/"+m.Name, m.Stat))
			}
			task.Run(s, c.Catch(del, zkops.GoneOK), k)
		})
	}
}

// candidate creates the replica's candidate (and the parents it needs,
// again if the election directory goes before the create).
// One named with a number the server can no longer order (zkops.Exhausted:
// the election directory's counter has run out, and every later candidate
// would be named ...2147483647 too, tying with it) is deleted, and made
// again once the directory has been emptied and made afresh, its counter
// back at zero (zkops.EmptyDir), as the lock and election recipes do.
// Candidates already queued go on in order meanwhile.
func (r *Replica) candidate(token string) task.Task[string] {
	attempt := c.Then(r.ensureParents(), func(task.Unit) task.Task[string] {
		return c.Then(createCandidate(r.cfg.Election, token, r.cfg.ACL), func(me string) task.Task[string] {
			seq, ok := candidateSeq(me[strings.LastIndexByte(me, '/')+1:])
			if !ok {
				return task.Fail[string](fmt.Errorf("idpersist: server named the candidate %q: no sequence number", me))
			}
			if !zkops.Exhausted(seq) || canary.On(bugExhaustedCandidate) {
				return task.Value(me)
			}
			return c.Then(c.Seq(zkops.Delete(me), zkops.EmptyDir(r.cfg.Election)), func(task.Unit) task.Task[string] {
				return task.Fail[string](errAgain)
			})
		})
	})
	// NoNode: the election directory was deleted (empty: its counter
	// reset by another replica, or by an operator) between ensureParents
	// and the create.
	return c.Retry(attempt, c.Policy{On: []error{errAgain, task.ErrNoNode}})
}

// candidateLen is the length of a candidate's name before the server's
// sequence number: "c-", the session id and the random token (16 hex
// digits each), each followed by "-".
const candidateLen = len(candidatePrefix) + 16 + 1 + 16 + 1

// candidateSeq parses the sequence number of a candidate's name, as
// ZooKeeper formats a Java int with %010d: ten digits, or a minus sign and
// nine or ten digits once the counter has wrapped. A name of another form
// is not a candidate: ok is false.
func candidateSeq(name string) (int64, bool) {
	if len(name) <= candidateLen || !strings.HasPrefix(name, candidatePrefix) || name[candidateLen-1] != '-' {
		return 0, false
	}
	return zkops.SeqAfter(name[candidateLen-1:], "-")
}

// ensureParents creates the ancestors of the configured nodes and the
// election node (all are gone after a total data loss).
func (r *Replica) ensureParents() task.Task[task.Unit] {
	var paths []string
	nodes := []string{r.cfg.Sequence, r.cfg.Limit, r.cfg.Election + "/x"}
	if r.cfg.Parent != "" {
		nodes = []string{r.cfg.Parent + "/x", r.cfg.Limits + "/x", r.cfg.Election + "/x"}
	}
	for _, p := range nodes {
		for _, a := range ancestors(p) {
			if !slices.Contains(paths, a) {
				paths = append(paths, a)
			}
		}
	}
	t := task.Done
	for _, p := range paths {
		// A node there already is fine, also under an ancestor that
		// refuses CREATE (the server checks the parent's permission
		// before it finds the node exists): look first.
		create := c.OnError(c.Map(zkops.Create(p, nil, task.Persistent, r.cfg.ACL), func(string) task.Unit { return task.Unit{} }),
			func(error) task.Task[task.Unit] { return task.Done }, task.ErrNodeExists)
		ensure := c.Then(c.Retry(task.Exists(p), c.Policy{}), func(st *task.Stat) task.Task[task.Unit] {
			if st != nil {
				return task.Done
			}
			return c.Retry(create, c.Policy{})
		})
		t = c.Seq(t, ensure)
	}
	return t
}

// createCandidate creates the ephemeral-sequential candidate named token;
// after connection loss it lists the children (behind a sync: the member
// the session comes back through may not have applied the create yet)
// and takes the node with the token if the create was applied. The node
// gets acl's ACL.
func createCandidate(election, token string, acl task.ACLProvider) task.Task[string] {
	find := c.Then(zkops.AfterSync(election, task.Children(election)), func(cl task.ChildList) task.Task[string] {
		for _, n := range cl.Names {
			if strings.HasPrefix(n, token) {
				return task.Value(election + "/" + n)
			}
		}
		return task.Fail[string](task.ErrNotSent) // not applied: create again
	})
	var attempt task.Task[string]
	attempt = c.OnError(zkops.Create(election+"/"+token, nil, task.EphemeralSequential, acl),
		func(error) task.Task[string] { return c.Retry(find, c.Policy{On: []error{task.ErrConnectionLoss}}) },
		task.ErrConnectionLoss)
	return c.Retry(attempt, c.Policy{On: []error{task.ErrNotSent}})
}

// queue returns the candidates among names (candidateSeq), lowest number
// first, ties (a counter run out: the number of every later candidate)
// broken by name, so that every replica sees one order. A candidate with
// an exhausted number never leads (candidate makes it again), so ties
// decide nothing; with bugExhaustedCandidate on, the suffix alone orders
// them, ties in listing order, as before.
func queue(names []string) []string {
	type member struct {
		name string
		seq  int64
	}
	q := make([]member, 0, len(names))
	for _, n := range names {
		if seq, ok := candidateSeq(n); ok {
			q = append(q, member{n, seq})
		}
	}
	if canary.On(bugExhaustedCandidate) {
		slices.SortStableFunc(q, func(a, b member) int { return cmp.Compare(a.name[len(a.name)-10:], b.name[len(b.name)-10:]) })
	} else {
		slices.SortFunc(q, func(a, b member) int { return cmp.Or(cmp.Compare(a.seq, b.seq), strings.Compare(a.name, b.name)) })
	}
	out := make([]string, len(q))
	for i, m := range q {
		out[i] = m.name
	}
	return out
}

// awaitTurn waits until me is the lowest candidate and belongs to the
// current session. Each candidate watches only the next lower one.
func (r *Replica) awaitTurn(me string) task.Task[task.Unit] {
	name := me[strings.LastIndexByte(me, '/')+1:]
	// The election directory gone means our candidate is gone too (a
	// directory is deleted only empty): deposed.
	list := c.OnError(task.Children(r.cfg.Election), func(error) task.Task[task.ChildList] {
		return task.Fail[task.ChildList](ErrDeposed)
	}, task.ErrNoNode)
	check := c.Then(list, func(cl task.ChildList) task.Task[task.Unit] {
		names := queue(cl.Names)
		i := slices.Index(names, name)
		if i < 0 {
			return task.Fail[task.Unit](ErrDeposed)
		}
		if i == 0 {
			return c.Then(task.Exists(me), func(st *task.Stat) task.Task[task.Unit] {
				return func(s *task.Scope, k task.Cont[task.Unit]) {
					if st == nil || st.EphemeralOwner != s.Session().ID {
						k(task.Unit{}, ErrDeposed)
						return
					}
					k(task.Unit{}, nil)
				}
			})
		}
		prev := r.cfg.Election + "/" + names[i-1]
		return c.Then(task.ExistsW(prev), func(sw task.StatWatch) task.Task[task.Unit] {
			if sw.Stat == nil {
				return task.Fail[task.Unit](errAgain)
			}
			return awaitAgain[task.Unit](sw.Watch)
		})
	})
	return c.Retry(check, c.Policy{On: []error{errAgain, task.ErrConnectionLoss, task.ErrNotSent}})
}

// lead runs the leader's loop in a scope of its own that ends, with
// errSuspended, as soon as the session is suspended.
func (r *Replica) lead(me string) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		ls := s.Child()
		if _, st := s.Current(); st != task.StateConnected {
			ls.Cancel(errSuspended)
		}
		unsub := s.Subscribe(func(ev task.Event) {
			if ev.Type == task.EventNone && ev.State != task.StateConnected {
				ls.Cancel(errSuspended)
			}
		})
		r.leading.Store(true)
		r.turns.Add(1)
		ls.OnDone(func(error) { r.leading.Store(false) })
		task.RunIn(ls, r.leaderLoop(me), func(v task.Unit, err error) {
			r.leading.Store(false)
			unsub()
			k(v, err)
		})
	}
}

// Known bugs the simulation must catch, switched on only by tests
// (internal/canary).
const (
	// bugPersistMod100 makes only marks divisible by 100 durable (the
	// original "persist when value % 100 == 0"), while the leader goes on
	// as if every mark were durable.
	bugPersistMod100 canary.Name = "idpersist/persist-mod-100"
	// bugPassLimit lets a generator take IDs above the reserved limit
	// instead of waiting for the leader to raise it.
	bugPassLimit canary.Name = "idpersist/pass-limit"
	// bugUnboundLimit: a limit holds for whatever sequence node is at its
	// path, so a sequence deleted and created again lower (an operator's
	// reset, a name removed and added again before the leader saw it go)
	// is drawn from under the limit of its earlier life, and repeats IDs.
	bugUnboundLimit canary.Name = "idpersist/unbound-limit"
	// bugExhaustedCandidate: a candidate named once the election
	// directory's counter has run out takes part as any other, and the
	// candidates tie: ordered by their numbers alone, in listing order,
	// two replicas may each take itself for the lowest, or each the other.
	bugExhaustedCandidate canary.Name = "idpersist/exhausted-candidate"
	// bugServeEndedOther: a Serve whose context ended as an expiry or a
	// deposition ended the replica's flow returns that error, which it
	// promises its caller never sees, instead of the context's end.
	bugServeEndedOther canary.Name = "idpersist/serve-ended-other"
)

// leaderState is what the leader knows between rounds of one sequence.
type leaderState struct {
	cfg   Config // Sequence, Limit, Store of this sequence
	mark  int64  // the durable mark, as last loaded or stored: never goes down
	multi bool   // one of the sequences under Config.Parent
	floor int64  // before the first limit, raise the sequence to this
}

var leadRetryOn = []error{task.ErrConnectionLoss, task.ErrNotSent, task.ErrBadVersion, task.ErrNodeExists, task.ErrNoNode}

func (r *Replica) leaderLoop(me string) task.Task[task.Unit] {
	if r.cfg.Parent != "" {
		return r.multiLoop(me)
	}
	load := task.Func(func(*task.Scope) (*leaderState, error) {
		m, err := r.cfg.Store.Load()
		return &leaderState{cfg: r.cfg, mark: m}, err
	})
	return r.serve(me, load)
}

// serve loads a sequence's state, then keeps its limit ahead until it
// fails (or, for a sequence under Parent, it is removed: errRemoved).
func (r *Replica) serve(me string, load task.Task[*leaderState]) task.Task[task.Unit] {
	return c.Then(load, func(st *leaderState) task.Task[task.Unit] {
		round := c.Retry(r.round(me, st), c.Policy{On: leadRetryOn})
		return c.Loop(task.Unit{}, func(task.Unit) bool { return true }, func(task.Unit) task.Task[task.Unit] { return round })
	})
}

// raiseMark makes v durable unless the mark already is at or above it:
// the one this leader last stored or loaded, and the one in the Store now.
// Reading the Store first matters when a leader that lost its role has
// not yet heard of it (its session expired while its deliveries were
// late, or it paused): it must not write its older, lower mark over the
// new leader's. That Load and this Store are not atomic together: the
// Store keeps the greater of its mark and v (the Store contract;
// FileStore under a file lock), so a deposed leader's late Store of a
// lower value does not lower the mark.
func (r *Replica) raiseMark(st *leaderState, v int64) task.Task[task.Unit] {
	return task.Func(func(*task.Scope) (task.Unit, error) {
		if v <= st.mark {
			return task.Unit{}, nil
		}
		if cur, err := st.cfg.Store.Load(); err != nil {
			return task.Unit{}, err
		} else if cur >= v {
			st.mark = cur
			return task.Unit{}, nil
		}
		if canary.On(bugPersistMod100) && v%100 != 0 {
			// Persists only round values, as the watch-driven original
			// did, yet believes the mark is v.
			st.mark = v
			return task.Unit{}, nil
		}
		if err := st.cfg.Store.Store(v); err != nil {
			return task.Unit{}, err
		}
		st.mark = v
		return task.Unit{}, nil
	})
}

// fenced applies op in a multi that first checks the leader's own
// candidate node: a leader whose session has lost the node writes nothing.
func fenced(me string, ops ...task.MultiOp) task.Task[task.Unit] {
	// Catch, not OnError with no error named (which returns its input
	// unchanged); and %v, not %w, so that the check's NoNode does not
	// match the leader's retry list: a deposed leader would retry its
	// write forever, at one instant.
	return c.Catch(c.Map(task.Multi(append([]task.MultiOp{&task.CheckRequest{Path: me, Version: 0}}, ops...)...), func([]task.MultiResult) task.Unit { return task.Unit{} }),
		func(err error) task.Task[task.Unit] {
			var me *task.MultiError
			if errors.As(err, &me) && me.Index == 0 {
				return task.Fail[task.Unit](fmt.Errorf("%w: %v", ErrDeposed, err))
			}
			return task.Fail[task.Unit](err)
		})
}

// round reads the limit and the sequence (setting watches), restores a
// missing sequence from the mark, raises the limit when needed (durably
// first), and otherwise waits for a change of either node.
func (r *Replica) round(me string, st *leaderState) task.Task[task.Unit] {
	cfg := st.cfg
	limitRead := c.OnError(c.Map(task.GetW(cfg.Limit), func(dw task.DataWatch) *task.DataWatch { return &dw }),
		func(error) task.Task[*task.DataWatch] { return task.Value[*task.DataWatch](nil) }, task.ErrNoNode)
	return c.Then(limitRead, func(lim *task.DataWatch) task.Task[task.Unit] {
		limit := int64(0)
		if lim != nil {
			l, err := seqid.Decode(lim.Data.Data)
			if err != nil {
				return task.Fail[task.Unit](fmt.Errorf("idpersist: limit node %s: %w", cfg.Limit, err))
			}
			limit = l
		}
		// A limit above the mark (a store that lags): adopt it first.
		adopt := r.raiseMark(st, limit)
		return c.Then(adopt, func(task.Unit) task.Task[task.Unit] {
			seqRead := c.OnError(c.Map(task.GetW(cfg.Sequence), func(dw task.DataWatch) *task.DataWatch { return &dw }),
				func(error) task.Task[*task.DataWatch] { return task.Value[*task.DataWatch](nil) }, task.ErrNoNode)
			return c.Then(seqRead, func(sq *task.DataWatch) task.Task[task.Unit] {
				if sq == nil && st.multi && lim != nil {
					// Under Parent, a sequence node deleted while its
					// limit remains was removed: stop serving it.
					return task.Fail[task.Unit](errRemoved)
				}
				if sq == nil { // lost (total data loss): restore from the mark before any ID is taken
					seed := max(st.mark, limit)
					return fenced(me, &task.CreateRequest{Path: cfg.Sequence, Data: seqid.Encode(seed), Mode: task.Persistent, ACL: cfg.ACL.For(cfg.Sequence)})
				}
				v, err := seqid.Decode(sq.Data.Data)
				if err != nil {
					return task.Fail[task.Unit](fmt.Errorf("idpersist: sequence node %s: %w", cfg.Sequence, err))
				}
				if st.floor > 0 {
					if v >= st.floor {
						st.floor = 0
					} else if lim == nil {
						// A name added again, below the mark of its
						// earlier life: raise it before any generator
						// can draw (they wait for the limit node).
						if sq.Data.Stat.Version == task.AnyVersion {
							return task.Fail[task.Unit](seqid.ErrVersionWrapped)
						}
						data := append(seqid.Encode(st.floor), sq.Data.Data[seqid.Size:]...)
						return fenced(me, &task.SetDataRequest{Path: cfg.Sequence, Data: data, Version: sq.Data.Stat.Version})
					}
				}
				bound, hasBound := int64(0), false
				if lim != nil {
					bound, hasBound = limitBound(lim.Data.Data)
				}
				rebind := (lim == nil || !hasBound || bound != sq.Data.Stat.Czxid) && !canary.On(bugUnboundLimit)
				if rebind {
					// No limit is bound to this sequence node yet: none
					// was written (first start, a total data loss, a name
					// added under Parent), or the node was deleted and
					// created again since (its czxid differs), by anyone:
					// generators wait. Raise it above every ID its
					// earlier lives handed out (at most the limit, at
					// most the mark) and write a limit bound to it, in
					// one multi: a generator that read the old limit's
					// version and an earlier incarnation's version that
					// the raise gives this one again is refused by the
					// limit's check (written in the same transaction).
					// Written apart, the raise left a window where its
					// check still passed: the same ID handed out twice.
					return r.rebind(me, st, sq, lim, v, limit)
				}
				if lim != nil && v+cfg.LowWater <= limit && !rebind && (hasBound || canary.On(bugUnboundLimit)) {
					return waitAny(sq.Watch, lim.Watch)
				}
				base := max(v, limit)
				if base > math.MaxInt64-cfg.Chunk {
					return task.Fail[task.Unit](seqid.ErrOverflow)
				}
				if sq.Data.Stat.Version == 0 && !canary.On(bugUnboundLimit) {
					// Never written: a new incarnation would share its
					// version, so generators draw only from a written
					// one. Write it once (same data), then bind.
					return fenced(me, &task.SetDataRequest{Path: cfg.Sequence, Data: sq.Data.Data, Version: 0})
				}
				newLimit := base + cfg.Chunk
				data := encodeLimit(newLimit, sq.Data.Stat.Czxid)
				if canary.On(bugUnboundLimit) {
					data = seqid.Encode(newLimit)
				}
				var write task.MultiOp
				if lim == nil {
					write = &task.CreateRequest{Path: cfg.Limit, Data: data, Mode: task.Persistent, ACL: cfg.ACL.For(cfg.Limit)}
				} else {
					if lim.Stat.Version == task.AnyVersion {
						return task.Fail[task.Unit](seqid.ErrVersionWrapped)
					}
					write = &task.SetDataRequest{Path: cfg.Limit, Data: data, Version: lim.Stat.Version}
				}
				// Durable first, then visible to generators.
				return c.Seq(r.raiseMark(st, newLimit), fenced(me, write))
			})
		})
	})
}

// rebind raises the sequence sq (value v) above every ID its earlier
// lives may have handed out, or writes it once when it was never written
// (a new incarnation shares version 0), and writes the limit bound to its
// incarnation, in one fenced multi, durably first (the mark).
func (r *Replica) rebind(me string, st *leaderState, sq, lim *task.DataWatch, v, limit int64) task.Task[task.Unit] {
	cfg := st.cfg
	var ops []task.MultiOp
	switch seed := max(st.mark, limit); {
	case v < seed:
		if sq.Data.Stat.Version == task.AnyVersion {
			return task.Fail[task.Unit](seqid.ErrVersionWrapped)
		}
		data := append(seqid.Encode(seed), sq.Data.Data[seqid.Size:]...)
		ops = append(ops, &task.SetDataRequest{Path: cfg.Sequence, Data: data, Version: sq.Data.Stat.Version})
		v = seed
	case sq.Data.Stat.Version == 0:
		ops = append(ops, &task.SetDataRequest{Path: cfg.Sequence, Data: sq.Data.Data, Version: 0})
	}
	base := max(v, limit)
	if base > math.MaxInt64-cfg.Chunk {
		return task.Fail[task.Unit](seqid.ErrOverflow)
	}
	newLimit := base + cfg.Chunk
	data := encodeLimit(newLimit, sq.Data.Stat.Czxid)
	if lim == nil {
		ops = append(ops, &task.CreateRequest{Path: cfg.Limit, Data: data, Mode: task.Persistent, ACL: cfg.ACL.For(cfg.Limit)})
	} else {
		if lim.Stat.Version == task.AnyVersion {
			return task.Fail[task.Unit](seqid.ErrVersionWrapped)
		}
		ops = append(ops, &task.SetDataRequest{Path: cfg.Limit, Data: data, Version: lim.Stat.Version})
	}
	return c.Seq(r.raiseMark(st, newLimit), fenced(me, ops...))
}

// waitAny waits until one of the watches fires (a node event, or the end
// of the session as an error). A watch another user of the session takes
// away (RemoveWatches: a cache of the node stopping) is one more wake-up:
// the caller reads again, which watches the node again.
func waitAny(ws ...*task.Watch) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Suspend(s, k, func(resume task.Cont[task.Unit]) func() {
			cs := s.Child()
			done := false
			for _, w := range ws {
				task.Run(cs, w.Wait(), func(_ task.Event, err error) {
					if done {
						return
					}
					if errors.Is(err, task.ErrWatchRemoved) {
						err = nil
					}
					done = true
					cs.Close()
					resume(task.Unit{}, err)
				})
			}
			return cs.Close
		})
	}
}
