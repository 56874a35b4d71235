package task

import "fmt"

// ZooKeeper operations as tasks. Each sends one request when run (so a
// retried task sends it again), completes on the executor goroutine, and
// fails with an *OpError that names the operation and path and wraps the
// sentinel (errors.Is(err, ErrNoNode), ...).

// Data is a node's data with its Stat.
type Data struct {
	Data []byte
	Stat Stat
}

// ChildList is a node's children, in no particular order, with its Stat.
type ChildList struct {
	Names []string
	Stat  Stat
}

// NodeACL is a node's ACL with its Stat (Stat.Aversion counts the changes
// of the ACL: the version SetACL checks).
type NodeACL struct {
	ACL  []ACL
	Stat Stat
}

// Created is the outcome of a create: the name the server gave the node
// (with its sequence number, for sequential modes) and its Stat.
type Created struct {
	Path string
	Stat Stat
}

// opTask returns a task that sends req and succeeds with f of the
// server's response, or fails with the response's error wrapped in an
// *OpError: the building block of the typed operations below. Built, it
// is one function (and req); run, it makes none: the request's wait
// holds k and f (opConv) as they are.
func opTask[T any](req Request, f func(Response) T) Task[T] {
	conv := opConv[T](f)
	return func(s *Scope, k Cont[T]) {
		runRequest(s, req, conv, k)
	}
}

// respConv hands a request's outcome to the continuation of its
// operation, k, converted to the operation's value. k is a Cont of the
// conv's type, held in an any: a function, which an interface holds
// without allocating, as it holds a conv (a function or an empty
// struct). So a request's wait needs no function made for the purpose.
type respConv interface {
	call(k any, r Response, err error)
}

// opConv is opTask's f as a respConv: k receives f of the response, or
// the error.
type opConv[T any] func(Response) T

func (f opConv[T]) call(k any, r Response, err error) {
	kt := k.(Cont[T])
	if err != nil {
		var zero T
		kt(zero, err)
		return
	}
	kt(f(r), nil)
}

// resumeConv is Resume(s, k', r, err) for the continuation k' that is
// conv.call(k, ...): the same count of nested calls and the same
// trampoline.
func resumeConv(s *Scope, conv respConv, k any, r Response, err error) {
	d := s.depth
	if *d < maxDepth {
		*d++
		conv.call(k, r, err)
		*d--
		return
	}
	// Copies, as Resume makes: only this path moves them to the heap.
	r2, err2 := r, err
	s.env.rt.Schedule(func() { conv.call(k, r2, err2) })
}

// runRequest is Run(s, t, k) for the task t that sends req and hands k
// its outcome through conv (sendAs), without making t: the same checks,
// the same count of nested calls and the same trampoline, so that a
// chain's steps run in the same order as through Run.
func runRequest[T any](s *Scope, req Request, conv respConv, k Cont[T]) {
	if s.err != nil {
		resumeConv(s, conv, k, Response{}, s.err)
		return
	}
	if invariants {
		k = once(k)
	}
	d := s.depth
	if *d < maxDepth {
		*d++
		sendAs(s, req, conv, k)
		*d--
		return
	}
	s.env.rt.Schedule(func() { runRequest(s, req, conv, k) })
}

// Exec sends req from a running step and calls k with the server's
// response, or with its error wrapped in an *OpError: for steps written by
// hand on a hot path (a retry loop that keeps its state in one value, say).
// A nil req fails with an *OpError wrapping ErrInvalidArgument (a nil
// pointer of a request type too: the connection refuses it).
func Exec(s *Scope, req Request, k Cont[Response]) {
	if req == nil {
		k(Response{}, &OpError{Op: "exec", Err: errNilRequest})
		return
	}
	send(s, req, nil, k)
}

// errNilRequest is the error of an operation given a nil request, in an
// *OpError naming the operation.
var errNilRequest error = fmt.Errorf("%w: nil request", ErrInvalidArgument)

func send(s *Scope, req Request, watch Watcher, k Cont[Response]) {
	if s.err != nil {
		k(Response{}, s.err)
		return
	}
	// One value per request: the wait that parks the chain (as Suspend's)
	// is also what the runtime hands the outcome to. Reused: see sendWait.
	w := s.env.rt.frames().sendWait()
	w.s, w.req, w.k = s, req, k
	s.addWait(w)
	s.env.rt.Send(req, w, watch)
}

// sendAs is send for a request whose outcome k (a Cont of conv's type)
// receives through conv.
func sendAs(s *Scope, req Request, conv respConv, k any) {
	if s.err != nil {
		conv.call(k, Response{}, s.err)
		return
	}
	w := s.env.rt.frames().sendWait()
	w.s, w.req, w.conv, w.kc = s, req, conv, k
	s.addWait(w)
	s.env.rt.Send(req, w, nil)
}

// sendWait is a request's wait in its scope and its Receiver. Waits are
// reused, from a free list in the runtime's Frames: a wait is free once
// the runtime has handed it the outcome (Receive, called once: the Conn
// calls done once) and it has left its scope (resumed its chain, or been
// abandoned).
type sendWait struct {
	waitLink
	s        *Scope
	req      Request
	k        Cont[Response]
	conv     respConv // instead of k: kc receives the outcome through conv
	kc       any
	received bool      // the outcome came while the abandonment was on its way
	nextFree *sendWait // in Frames.freeSends
}

// sendWait returns a free wait.
func (fr *Frames) sendWait() *sendWait {
	w := fr.freeSends
	if w == nil {
		return new(sendWait)
	}
	fr.freeSends, w.nextFree = w.nextFree, nil
	return w
}

// free puts w, done with, on its runtime's free list.
func (w *sendWait) free() {
	fr := w.s.env.rt.frames()
	*w = sendWait{nextFree: fr.freeSends}
	fr.freeSends = w
}

// Receive resumes the chain with the outcome, unless the wait was
// abandoned (the scope ended: its error went to k already) or the scope
// has ended and the abandonment is on its way (a late result, dropped).
func (w *sendWait) Receive(r Response) {
	if w.owner == nil {
		w.free()
		return
	}
	if w.owner.err != nil {
		w.received = true // abandon frees w
		return
	}
	w.owner.removeWait(w)
	s, k, err := w.s, w.k, wrapResponseErr(w.req, r)
	conv, kc := w.conv, w.kc
	w.free()
	if conv != nil {
		resumeConv(s, conv, kc, r, err)
		return
	}
	Resume(s, k, r, err)
}

// abandon ends the wait with the scope's error. A deadline names the
// request that was waiting for its reply (an *OpError wrapping
// ErrDeadlineExceeded: "zk get /a: deadline exceeded"); other ends
// (cancel, session end, close) come as they are.
func (w *sendWait) abandon(err error) {
	if err == ErrDeadlineExceeded {
		err = &OpError{Op: w.req.OpName(), Path: w.req.NodePath(), Err: err}
	}
	k, conv, kc := w.k, w.conv, w.kc
	if w.received {
		w.free()
	}
	if conv != nil {
		conv.call(kc, Response{}, err)
		return
	}
	k(Response{}, err)
}

func wrapResponseErr(req Request, r Response) error {
	if r.Err == nil {
		return nil
	}
	if m, ok := req.(*MultiRequest); ok {
		for i, res := range r.Results {
			if res.Err != nil && res.Err != ErrRuntimeInconsistency && !res.RolledBack {
				path := ""
				if i < len(m.Ops) && m.Ops[i] != nil {
					path = m.Ops[i].NodePath()
				}
				e := &multiOpError{OpError{Op: "multi", Path: path}, MultiError{Index: i, Err: res.Err}}
				e.OpError.Err = &e.MultiError
				return &e.OpError
			}
		}
	}
	return opErr(req.OpName(), req.NodePath(), r.Err)
}

// multiOpError is the *OpError of a failed multi and the *MultiError it
// wraps, which live together: one allocation for both.
type multiOpError struct {
	OpError
	MultiError
}

// Create creates a node with the open ACL and succeeds with its name.
func Create(path string, data []byte, mode CreateMode) Task[string] {
	req := &CreateRequest{Path: path, Data: data, Mode: mode, ACL: OpenACL}
	return func(s *Scope, k Cont[string]) {
		runRequestNested(s, req, createdPath{}, k)
	}
}

// createdPath is Create's conversion of the outcome: the name created.
type createdPath struct{}

func (createdPath) call(k any, r Response, err error) {
	if err != nil {
		k.(Cont[string])("", err)
		return
	}
	k.(Cont[string])(r.Path, nil)
}

// runRequestNested is Run(s, t, k') where t sends req (an opTask) and k'
// hands k the outcome through conv: what Create did as a map over
// CreateWith, without the map's functions. It makes the same checks, the
// same count of nested calls and the same trampoline as that Run, so that
// a chain's steps run in the order they did.
func runRequestNested[T any](s *Scope, req Request, conv respConv, k Cont[T]) {
	if s.err != nil {
		resumeConv(s, conv, k, Response{}, s.err)
		return
	}
	if invariants {
		k = once(k)
	}
	d := s.depth
	if *d < maxDepth {
		*d++
		runRequest(s, req, conv, k)
		*d--
		return
	}
	s.env.rt.Schedule(func() { runRequestNested(s, req, conv, k) })
}

// CreateWith creates a node as r describes (ACL, TTL); a nil ACL means
// OpenACL. A nil r fails with an *OpError wrapping ErrInvalidArgument,
// without sending anything.
func CreateWith(r *CreateRequest) Task[Created] {
	if r == nil {
		return Fail[Created](&OpError{Op: "create", Err: errNilRequest})
	}
	if r.ACL == nil {
		c := *r
		c.ACL = OpenACL
		r = &c
	}
	return opTask(r, func(resp Response) Created { return Created{Path: resp.Path, Stat: resp.Stat} })
}

// Delete deletes a node if its version matches (AnyVersion: any).
func Delete(path string, version int32) Task[Unit] {
	return opTask(&DeleteRequest{Path: path, Version: version}, func(Response) Unit { return Unit{} })
}

// Exists returns the node's Stat, or nil if there is no such node.
func Exists(path string) Task[*Stat] {
	req := &ExistsRequest{Path: path} // one per task, as request's
	return func(s *Scope, k Cont[*Stat]) {
		sendAs(s, req, existsConv{}, k)
	}
}

// existsConv is Exists's conversion of the outcome (existsResult).
type existsConv struct{}

func (existsConv) call(k any, r Response, err error) { k.(Cont[*Stat])(existsResult(r, err)) }

func existsResult(r Response, err error) (*Stat, error) {
	if err != nil {
		if isNoNode(err) {
			return nil, nil
		}
		return nil, err
	}
	st := r.Stat
	return &st, nil
}

func isNoNode(err error) bool {
	oe, ok := err.(*OpError)
	return ok && oe.Err == ErrNoNode
}

// Set writes a node's data if its version matches and returns the new Stat.
func Set(path string, data []byte, version int32) Task[Stat] {
	return opTask(&SetDataRequest{Path: path, Data: data, Version: version},
		func(r Response) Stat { return r.Stat })
}

// Get reads a node's data and Stat.
func Get(path string) Task[Data] {
	return opTask(&GetDataRequest{Path: path}, func(r Response) Data { return Data{r.Data, r.Stat} })
}

// Children lists a node's children, in no particular order.
func Children(path string) Task[ChildList] {
	return opTask(&GetChildrenRequest{Path: path},
		func(r Response) ChildList { return ChildList{r.Children, r.Stat} })
}

// GetACL reads a node's ACL and Stat. It needs READ or ADMIN on the node;
// without ADMIN the ids of digest entries read "user:x".
func GetACL(path string) Task[NodeACL] {
	return opTask(&GetACLRequest{Path: path}, func(r Response) NodeACL { return NodeACL{r.ACL, r.Stat} })
}

// SetACL replaces a node's ACL if its ACL version (Stat.Aversion) matches
// (AnyVersion: any) and returns the new Stat. It needs ADMIN on the node.
func SetACL(path string, acl []ACL, version int32) Task[Stat] {
	return opTask(&SetACLRequest{Path: path, ACL: acl, Version: version},
		func(r Response) Stat { return r.Stat })
}

// Sync waits until the session's server has caught up with the leader.
func Sync(path string) Task[Unit] {
	return opTask(&SyncRequest{Path: path}, func(Response) Unit { return Unit{} })
}

// Multi applies ops atomically. On failure the error is an *OpError
// wrapping a *MultiError that says which op failed and why.
func Multi(ops ...MultiOp) Task[[]MultiResult] {
	return opTask(&MultiRequest{Ops: ops}, func(r Response) []MultiResult { return r.Results })
}

// The operations of a multi, one constructor each, so that a multi (or a
// recipe's Fenced write) reads as one line:
//
//	held.Fenced(task.SetOp("/app/config", data, task.AnyVersion))

// CreateOp is the multi operation that creates path with data in mode,
// with the open ACL as Create (set ACL or TTL on the returned request for
// others).
func CreateOp(path string, data []byte, mode CreateMode) *CreateRequest {
	return &CreateRequest{Path: path, Data: data, Mode: mode, ACL: OpenACL}
}

// SetOp is the multi operation that sets path's data if its version
// matches (AnyVersion: any).
func SetOp(path string, data []byte, version int32) *SetDataRequest {
	return &SetDataRequest{Path: path, Data: data, Version: version}
}

// DeleteOp is the multi operation that deletes path if its version
// matches (AnyVersion: any).
func DeleteOp(path string, version int32) *DeleteRequest {
	return &DeleteRequest{Path: path, Version: version}
}

// CheckOp is the multi operation that only checks that path exists at
// version (AnyVersion: that it exists).
func CheckOp(path string, version int32) *CheckRequest {
	return &CheckRequest{Path: path, Version: version}
}
