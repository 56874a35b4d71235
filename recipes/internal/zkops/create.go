package zkops

import (
	"errors"

	"github.com/zkflow/zkflow/task"
)

// CreateUnique creates req, a node under dir whose name starts with a
// prefix unique to the caller's attempt (usually ephemeral sequential),
// and succeeds with the name the server gave it (not its path):
//
//   - success: the created name;
//   - ErrNoNode: dir is missing; EnsurePath(dir, acl), then create again
//     (an error of EnsurePath ends the task with it);
//   - ErrNotSent: create again;
//   - ErrConnectionLoss: the create may or may not have been applied. If
//     settle is nil or returns nil, create again without looking (what
//     a recipe with no unique prefix would have to do). Otherwise run the
//     task settle returns (Owned under the attempt's prefix and session):
//     a name found is the node the create made; none means the create was
//     not applied (the listing came after it in the session's order), so
//     create again; its error ends the task;
//   - any other error ends the task with it.
//
// The node is created with req.ACL (nil: task.OpenACL) and the ancestors
// EnsurePath makes with acl's ACL for their paths; a recipe passes its
// provider as acl and acl.For(req.Path) as req.ACL.
func CreateUnique(req *task.CreateRequest, dir string, acl task.ACLProvider, settle func() task.Task[[]string]) task.Task[string] {
	return func(s *task.Scope, k task.Cont[string]) {
		u := &uniqueCreate{s: s, k: k, req: req, dir: dir, acl: acl, settle: settle}
		u.create()
	}
}

// uniqueCreate is one run of CreateUnique's task: its state, the first
// attempt's request and the continuation of every attempt's create, in
// one allocation.
type uniqueCreate struct {
	s         *task.Scope
	k         task.Cont[string]
	req       *task.CreateRequest
	dir       string
	acl       task.ACLProvider
	settle    func() task.Task[[]string]
	first     task.CreateRequest // the first attempt's request
	sent      bool               // first has been sent
	onCreated task.Cont[task.Created]
}

// create sends an attempt's create: a request of its own for each
// attempt (one sent is never changed).
func (u *uniqueCreate) create() {
	r := &u.first
	if u.sent {
		r = new(task.CreateRequest)
	}
	u.sent = true
	*r = *u.req
	if u.onCreated == nil {
		u.onCreated = u.created
	}
	task.Run(u.s, task.CreateWith(r), u.onCreated)
}

func (u *uniqueCreate) created(cr task.Created, err error) {
	s, k := u.s, u.k
	switch {
	case err == nil:
		k(task.Base(cr.Path), nil)
	case errors.Is(err, task.ErrNoNode):
		task.Run(s, EnsurePath(u.dir, u.acl), func(_ task.Unit, err error) {
			if err != nil {
				k("", err)
				return
			}
			u.create()
		})
	case errors.Is(err, task.ErrConnectionLoss):
		var t task.Task[[]string]
		if u.settle != nil {
			t = u.settle()
		}
		if t == nil {
			u.create()
			return
		}
		task.Run(s, t, func(names []string, err error) {
			switch {
			case err != nil:
				k("", err)
			case len(names) == 0:
				u.create()
			default:
				k(names[0], nil)
			}
		})
	case errors.Is(err, task.ErrNotSent):
		u.create()
	default:
		k("", err)
	}
}
