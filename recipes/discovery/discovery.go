package discovery

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// ErrUnregistered is Registration.Err after Unregister.
var ErrUnregistered = errors.New("discovery: unregistered")

// Discovery is the set of services registered under one base path, laid
// out as Curator's ServiceDiscovery lays them out:
// BASE/<service name>/<instance id>, each node the JSON of the instance.
// A Discovery holds no state but the parses its caches and queries share
// (each registration's data is parsed once between them): one value may
// be shared by any number of flows and executors. A nil or zero Discovery
// (not made by New) has no base path: its tasks fail, and NewCache fails,
// with an error wrapping task.ErrInvalidArgument.
type Discovery struct {
	base   string
	acl    task.ACLProvider
	parsed *parseMemo // shared by its caches and queries
}

// Option configures a Discovery (New, NewClient).
type Option interface{ apply(*Discovery) }

type aclOption task.ACLProvider

func (o aclOption) apply(d *Discovery) { d.acl = task.ACLProvider(o) }

// WithACL makes the discovery create its nodes (instances, and the
// directories it creates) with the ACL p gives for each path. Without it,
// or with p nil, they get task.OpenACL.
func WithACL(p task.ACLProvider) Option { return aclOption(p) }

// New returns the discovery under base. An invalid base fails with an
// error wrapping task.ErrInvalidPath.
func New(base string, opts ...Option) (*Discovery, error) {
	if err := task.ValidatePath(base, false); err != nil {
		return nil, fmt.Errorf("discovery: base %q: %w", base, err)
	}
	if base == "/zookeeper" || strings.HasPrefix(base, "/zookeeper/") {
		return nil, fmt.Errorf("discovery: base %q: reserved: %w", base, task.ErrInvalidPath)
	}
	d := &Discovery{base: base, parsed: &parseMemo{}}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("discovery: nil option: %w", task.ErrInvalidArgument)
		}
		o.apply(d)
	}
	return d, nil
}

// Base is the discovery's base path ("" for a nil or zero Discovery).
func (d *Discovery) Base() string {
	if d == nil {
		return ""
	}
	return d.base
}

// ServicePath is the directory of the service's instances ("" for a nil
// or zero Discovery).
func (d *Discovery) ServicePath(name string) string {
	if d.zero() {
		return ""
	}
	return task.Join(d.base, name)
}

// zero reports a nil or zero Discovery (not made by New): its tasks fail
// with errZero("Discovery"). A zero one's base is "": its nodes would be
// made at the root.
func (d *Discovery) zero() bool { return d == nil || d.base == "" }

// validName checks a service name or instance id: it becomes the name of
// a node, so it must be one valid path component.
func validName(what, s string) error {
	if err := group.ValidateID(s); err != nil {
		return fmt.Errorf("discovery: %s %q: %w", what, s, task.ErrInvalidPath)
	}
	return nil
}

// validService checks a service name: one valid path component whose
// directory is not in ZooKeeper's reserved tree (service "zookeeper"
// under base "/").
func (d *Discovery) validService(name string) error {
	if err := validName("service name", name); err != nil {
		return err
	}
	if p := d.ServicePath(name); p == "/zookeeper" {
		return fmt.Errorf("discovery: service %q under %q: %s is reserved: %w", name, d.base, p, task.ErrInvalidPath)
	}
	return nil
}

// Registration is an instance registered by Register. A dynamic one keeps
// its ephemeral node registered (on every new session after an expiry,
// and if someone deletes it) until Unregister; a static or permanent one
// is a persistent node. Its accessors are safe from any goroutine.
type Registration struct {
	d    *Discovery
	inst Instance
	rt   task.Runtime  // the executor it was registered on
	m    *group.Member // dynamic instances
	done chan struct{} // persistent instances: closed by Unregister
	// czxid is a persistent instance's incarnation: the node Register
	// made or found and kept (its data replaced). Unregister deletes that
	// one only.
	czxid int64
}

// Instance is the instance as registered (its RegistrationTimeUTC set;
// its Payload and URISpec copied as Register was made, not the caller's).
func (r *Registration) Instance() Instance {
	if r == nil {
		return Instance{}
	}
	return r.inst
}

// Path is the instance's node ("" for a nil or zero Registration).
func (r *Registration) Path() string {
	if r.zero() {
		return ""
	}
	return task.Join(r.d.ServicePath(r.inst.Name), r.inst.ID)
}

// zero reports a nil or zero Registration (not made by Register): it
// has ended (Done is closed, Registered false) and its Err and
// Unregister fail with an error wrapping task.ErrInvalidArgument.
func (r *Registration) zero() bool { return r == nil || r.d == nil }

// Registered reports whether the node is known to exist: for a dynamic
// instance, on the current session (false from an expiry until it is
// registered again on the new session); a persistent one is registered
// until Unregister.
func (r *Registration) Registered() bool {
	if r.zero() {
		return false
	}
	if r.m != nil {
		return r.m.Registered()
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// Done is closed when the registration ends: Unregister, or, for a
// dynamic instance, the executor closed or an error no retry settles
// (Err says which).
func (r *Registration) Done() <-chan struct{} {
	if r.zero() {
		return closed
	}
	if r.m != nil {
		return r.m.Done()
	}
	return r.done
}

// Err is nil while the registration lasts, then why it ended
// (ErrUnregistered after Unregister).
func (r *Registration) Err() error {
	if r.zero() {
		return errZero("Registration")
	}
	if r.m != nil {
		err := r.m.Err()
		if errors.Is(err, group.ErrLeft) {
			return ErrUnregistered
		}
		return err
	}
	select {
	case <-r.done:
		return ErrUnregistered
	default:
		return nil
	}
}

// Register returns a task that registers inst: the node
// BASE/<inst.Name>/<inst.ID> holding inst's JSON, ephemeral for a Dynamic
// instance (the default when ServiceType is empty) and kept registered
// until Unregister, persistent for Static and Permanent ones (an existing
// node's data is replaced; an ephemeral node there, a Dynamic
// registration of the same id, is deleted and the node made again
// persistent, as Curator's registerService does). A Dynamic instance
// whose id has a node already, of this session or another's, waits
// until that node is gone (group.Group.Join): a registration of the id
// not unregistered yet, or unregistered (ended: Done closed) while its
// delete goes on, in the background or, refused by an ACL, until the ACL
// lets it; to change an instance, Unregister it and Register it again.
// A Static or Permanent instance's Register first waits until no
// Unregister of the same instance goes on on the flow's executor
// (whoever runs it: a Client, in the background after its ctx ended, or
// the task face, once its flow has started): its delete, sent after
// Register found and kept the node or settled after a lost reply, would
// otherwise delete the registration after Register returned. An
// Unregister of the same id on another executor or by another process
// is not waited for: registrations of one id share one node.
// RegistrationTimeUTC is set from the executor's clock when 0. An
// invalid name or id fails with an error wrapping task.ErrInvalidPath; a
// DynamicSequential instance, or one MarshalJSON refuses (a payload that
// is not JSON, a port Curator's Integer cannot hold), with one wrapping
// task.ErrInvalidArgument; an instance whose JSON is over the server's
// data limit with task.ErrDataTooLarge, leaving no node.
func (d *Discovery) Register(inst Instance) task.Task[*Registration] {
	if d.zero() {
		return task.Fail[*Registration](errZero("Discovery"))
	}
	if err := d.validService(inst.Name); err != nil {
		return task.Fail[*Registration](err)
	}
	if err := validName("instance id", inst.ID); err != nil {
		return task.Fail[*Registration](err)
	}
	if inst.ServiceType == "" {
		inst.ServiceType = Dynamic
	}
	switch inst.ServiceType {
	case Dynamic, Static, Permanent:
	default:
		return task.Fail[*Registration](fmt.Errorf("discovery: register %s/%s: service type %q: %w", inst.Name, inst.ID, inst.ServiceType, task.ErrInvalidArgument))
	}
	inst = inst.own() // Registration.Instance: as registered, whatever the caller does with its slices
	js, err := inst.jsonTemplate()
	if err != nil {
		return task.Fail[*Registration](fmt.Errorf("discovery: register %s/%s: %w: %w", inst.Name, inst.ID, task.ErrInvalidArgument, err))
	}
	return func(s *task.Scope, k task.Cont[*Registration]) {
		inst := inst // each run's own: a run again takes its own time
		if inst.RegistrationTimeUTC == 0 {
			inst.RegistrationTimeUTC = s.Now().UnixMilli()
		}
		data := js.with(inst.RegistrationTimeUTC) // json.Marshal(inst)
		r := &Registration{d: d, inst: inst, rt: s.Runtime()}
		if inst.ServiceType != Dynamic {
			r.done = make(chan struct{})
			put := putPersistent(r.Path(), data, d.acl)
			if !canary.On(bugRegisterBesideUnregister) && !canary.On(bugRegisterBehindUnregister) {
				put = c.Then(afterUnregisters(r.Path()), func(task.Unit) task.Task[int64] { return putPersistent(r.Path(), data, d.acl) })
			}
			task.Run(s, put, func(czxid int64, err error) {
				if err != nil {
					k(nil, err)
					return
				}
				r.czxid = czxid
				k(r, nil)
			})
			return
		}
		g, err := group.New(d.ServicePath(inst.Name), group.WithACL(d.acl))
		if err != nil {
			k(nil, err)
			return
		}
		task.Run(s, g.Join(inst.ID, data), func(m *group.Member, err error) {
			if err != nil {
				k(nil, err)
				return
			}
			r.m = m
			k(r, nil)
		})
	}
}

// putPersistent creates path (persistent, with data), or replaces the
// data of the node there, retrying past connection loss, and succeeds
// with the node's czxid (the incarnation it made or kept). Another
// session's ephemeral node there is deleted (that incarnation only) and
// the node made again, persistent.
func putPersistent(path string, data []byte, acl task.ACLProvider) task.Task[int64] {
	return func(s *task.Scope, k task.Cont[int64]) {
		var create func()
		create = func() {
			req := &task.CreateRequest{Path: path, Data: data, Mode: task.Persistent, ACL: acl.For(path)}
			task.Run(s, c.Retry(task.CreateWith(req), zkops.Retry), func(cr task.Created, err error) {
				switch {
				case err == nil:
					k(cr.Stat.Czxid, nil)
				case errors.Is(err, task.ErrNoNode):
					task.Run(s, zkops.EnsurePath(task.Parent(path), acl), func(_ task.Unit, err error) {
						if err != nil {
							k(0, err)
							return
						}
						create()
					})
				case errors.Is(err, task.ErrNodeExists):
					task.Run(s, c.Retry(task.Set(path, data, task.AnyVersion), zkops.Retry), func(st task.Stat, err error) {
						switch {
						case errors.Is(err, task.ErrNoNode):
							create()
						case err == nil && st.EphemeralOwner != 0:
							// Another session's ephemeral (a Dynamic
							// registration of the same id): a persistent
							// instance is not kept by it. As Curator's
							// registerService does, it is deleted and the
							// node made again, persistent.
							task.Run(s, zkops.DeleteNode(path, st), func(_ task.Unit, err error) {
								if err != nil {
									k(0, err)
									return
								}
								create()
							})
						default:
							k(st.Czxid, err)
						}
					})
				default:
					k(0, err)
				}
			})
		}
		create()
	}
}

// Unregister returns a task that ends the registration and deletes the
// instance's node: a dynamic instance's only if it belongs to the flow's
// session (as group.Member.Leave does); a persistent one's only if it is
// still the node Register made or kept (its incarnation: the same czxid,
// whatever its data since). A node made again at the path since, by
// anyone (another process registering the same id, an operator), is left
// alone, also when the delete is settled after a lost reply or sent
// after a cut, but in ZooKeeper's window between the read of the node
// and its delete at the version read (PROTOCOL.md). A node
// already gone, or another one there, is success; Unregister is
// idempotent. A delete an ACL refuses (task.ErrNoAuth: an operator closed
// the service's directory to it) fails with the refusal at once and goes
// on in the background until the ACL lets it: a dynamic instance's while
// its session lasts (its end deletes the node), a persistent one's
// across expiries until the executor closes (its node read and deleted,
// that incarnation only, every task.RecheckAfter). Registrations of the
// same id share one node: Unregister of any of them deletes it. Run on
// another executor than the one that registered, it does nothing and
// fails with an error wrapping task.ErrInvalidArgument.
//
// While a persistent instance's Unregister runs, its refused delete in
// the background included, a Register of the same instance on the same
// executor waits for it (see Discovery.Register).
func (r *Registration) Unregister() task.Task[task.Unit] {
	return r.unregister(false)
}

// unregister is Unregister. With acrossExpiry, a run that ends with the
// session's expiry keeps its Unregister counted (unregisterings): the
// caller runs the same task again on the next session, which takes the
// count over.
func (r *Registration) unregister(acrossExpiry bool) task.Task[task.Unit] {
	if r.zero() {
		return task.Fail[task.Unit](errZero("Registration"))
	}
	if r.m != nil {
		leave := r.m.Leave()
		return func(s *task.Scope, k task.Cont[task.Unit]) {
			if s.Runtime() != r.rt {
				k(task.Unit{}, errNotOurs)
				return
			}
			leave(s, k)
		}
	}
	path := r.Path()
	// held: counted in unregisterings, across the runs of acrossExpiry's
	// task (one after another). The task face's runs may overlap (a task
	// value run twice does the work twice): each counts its own.
	held := false
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if s.Runtime() != r.rt {
			k(task.Unit{}, errNotOurs)
			return
		}
		select {
		case <-r.done:
		default:
			close(r.done)
		}
		u := unregisteringsOf(s.Runtime())
		if !held {
			u.begin(path)
			held = acrossExpiry
		}
		del := zkops.DeleteNode(path, task.Stat{Czxid: r.czxid})
		if canary.On(bugUnregisterAnyIncarnation) {
			del = zkops.Delete(path)
		}
		task.Run(s, del, func(_ task.Unit, err error) {
			if acrossExpiry && (errors.Is(err, task.ErrSessionExpired) || errors.Is(s.Err(), task.ErrSessionExpired)) {
				k(task.Unit{}, err) // run again on the next session, still counted
				return
			}
			held = false
			if errors.Is(err, task.ErrNoAuth) && !canary.On(bugRefusedUnregisterDropped) {
				// Refused by an ACL: the delete goes on in the
				// background, still counted, once the ACL lets it.
				keepUnregistering(s.Runtime(), u, path, r.czxid)
			} else {
				u.end(path)
			}
			k(task.Unit{}, err)
		})
	}
}

// bugUnregisterAnyIncarnation: a persistent instance's Unregister deletes
// its path at any version, so that its delete, settled after a lost
// reply, deletes a node another process made again at the path
// meanwhile (TestUnregisterAfterLostReplyLeavesAnotherProcessRegistration).
const bugUnregisterAnyIncarnation canary.Name = "discovery/unregister-any-incarnation"

// Names returns a task that lists the services registered under the base
// path, sorted. A missing base path has none. Under base "/", ZooKeeper's
// own /zookeeper is left out: it is no service (Register, Query and
// NewCache refuse the name).
func (d *Discovery) Names() task.Task[[]string] {
	if d.zero() {
		return task.Fail[[]string](errZero("Discovery"))
	}
	return func(s *task.Scope, k task.Cont[[]string]) {
		task.Run(s, c.Retry(task.Children(d.base), zkops.Retry), func(cl task.ChildList, err error) {
			if errors.Is(err, task.ErrNoNode) {
				k(nil, nil)
				return
			}
			names := slices.Clone(cl.Names)
			if d.base == "/" {
				names = slices.DeleteFunc(names, func(n string) bool { return d.validService(n) != nil })
			}
			slices.Sort(names)
			k(names, err)
		})
	}
}

// Query returns a task that reads the instances of service name once: it
// lists the service's directory, then reads each instance, in the order
// of their node names (a Cache's order; the node's name is the id, but
// for Curator's DynamicSequential instances, named by the id and a
// sequence number).
// A missing directory has no instances; an instance deleted between the
// listing and its read is left out, and so is a node whose data is not
// an instance (ParseInstance fails), where Curator's queryForInstances
// would fail the whole query. An invalid name fails with an error
// wrapping task.ErrInvalidPath.
func (d *Discovery) Query(name string) task.Task[[]Instance] {
	if d.zero() {
		return task.Fail[[]Instance](errZero("Discovery"))
	}
	if err := d.validService(name); err != nil {
		return task.Fail[[]Instance](err)
	}
	dir := d.ServicePath(name)
	return func(s *task.Scope, k task.Cont[[]Instance]) {
		task.Run(s, c.Retry(task.Children(dir), zkops.Retry), func(cl task.ChildList, err error) {
			if errors.Is(err, task.ErrNoNode) {
				k(nil, nil)
				return
			}
			if err != nil {
				k(nil, err)
				return
			}
			ids := slices.Clone(cl.Names)
			slices.Sort(ids)
			var out []Instance
			var next func(i int)
			next = func(i int) {
				if i == len(ids) {
					k(out, nil)
					return
				}
				task.Run(s, c.Retry(task.Get(task.Join(dir, ids[i])), zkops.Retry), func(dt task.Data, err error) {
					switch {
					case errors.Is(err, task.ErrNoNode):
					case err != nil:
						k(nil, err)
						return
					default:
						if in, ok := d.parsed.parse(dt.Data); ok {
							out = append(out, in.own()) // the caller's to modify
						}
					}
					next(i + 1)
				})
			}
			next(0)
		})
	}
}

// errNotOurs is the error of Unregister run on another executor than the
// registration's.
var errNotOurs = fmt.Errorf("discovery: a registration made on another executor: %w", task.ErrInvalidArgument)

// errZero is the error of a method called on a nil or zero value (one
// not made by the package's constructor, or Register for a Registration).
func errZero(what string) error {
	return fmt.Errorf("discovery: nil or zero %s: %w", what, task.ErrInvalidArgument)
}

// closed is the Done of what has ended from the start: a nil or zero
// Registration or Cache.
var closed = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()
