package conformance

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/task"
)

// Case is one checked ZooKeeper behaviour.
type Case struct {
	Name   string // group/short-name, unique
	Checks string // the ZooKeeper behaviour, in a sentence
	Run    func(e *Env)
}

// Env is what a case runs in: a target, a first connected client and a
// fresh persistent node (Base) that the case works under.
type Env struct {
	T      testing.TB
	Target Target
	Base   string
	C      *Client
}

// DefaultTimeout is the session timeout clients ask for.
const DefaultTimeout = 10 * time.Second

// Run runs every case as a subtest against a target made by newTarget
// (called once per case), and logs how many passed, failed and were
// skipped (a target lacking a capability skips the cases that need it).
func Run(t *testing.T, newTarget func(t testing.TB) Target) {
	RunCases(t, Cases(), newTarget)
}

// RunCases is Run for a selection of cases.
func RunCases(t *testing.T, cases []Case, newTarget func(t testing.TB) Target) {
	var passed, failed, skipped int
	for _, c := range cases {
		ok := t.Run(c.Name, func(t *testing.T) {
			defer func() {
				if t.Skipped() {
					skipped++
				}
			}()
			e := NewEnv(t, newTarget(t), c.Name)
			c.Run(e)
		})
		if !ok {
			failed++
		}
	}
	passed = len(cases) - failed - skipped
	t.Logf("conformance: %d cases, %d passed, %d failed, %d skipped", len(cases), passed, failed, skipped)
}

// NewEnv connects a first client and prepares Base for the named case.
func NewEnv(t testing.TB, tgt Target, name string) *Env {
	t.Helper()
	e := &Env{T: t, Target: tgt}
	e.C = newClient(t, tgt, DefaultTimeout)
	root := "/zkflow-conformance"
	e.Base = root + "/" + strings.NewReplacer("/", "_", " ", "_").Replace(name)
	if r := e.C.Do(&task.CreateRequest{Path: root, ACL: task.OpenACL}); r.Err != nil && r.Err != task.ErrNodeExists {
		t.Fatalf("create %s: %v", root, r.Err)
	}
	e.deleteTree(e.Base)
	if r := e.C.Do(&task.CreateRequest{Path: e.Base, ACL: task.OpenACL}); r.Err != nil {
		t.Fatalf("create %s: %v", e.Base, r.Err)
	}
	return e
}

func (e *Env) deleteTree(path string) {
	r := e.C.Do(&task.GetChildrenRequest{Path: path})
	if r.Err != nil {
		return
	}
	for _, ch := range r.Children {
		e.deleteTree(task.Join(path, ch))
	}
	e.C.Do(&task.DeleteRequest{Path: path, Version: task.AnyVersion})
}

// P returns Base joined with rel ("" is Base itself).
func (e *Env) P(rel string) string {
	if rel == "" {
		return e.Base
	}
	return e.Base + "/" + strings.TrimPrefix(rel, "/")
}

// NewClient connects another client.
func (e *Env) NewClient() *Client { return newClient(e.T, e.Target, DefaultTimeout) }

// NewAuthClient connects another client that presents auth on every
// connect (the case is skipped on a target that is not an AuthTarget).
func (e *Env) NewAuthClient(auth ...task.AuthInfo) *Client {
	e.T.Helper()
	at := Need[AuthTarget](e)
	return startClient(e.T, e.Target, at.NewAuthConn(e.T, DefaultTimeout, auth))
}

// Create creates path (Persistent unless mode says) with e.C and fails the
// case on error; it returns the created name and Stat.
func (e *Env) Create(path string, data string, mode task.CreateMode) (string, task.Stat) {
	e.T.Helper()
	r := e.C.Do(&task.CreateRequest{Path: path, Data: []byte(data), Mode: mode, ACL: task.OpenACL})
	if r.Err != nil {
		e.T.Fatalf("create %s: %v", path, r.Err)
	}
	return r.Path, r.Stat
}

// Mk creates persistent nodes under Base (relative paths).
func (e *Env) Mk(rels ...string) {
	e.T.Helper()
	for _, rel := range rels {
		e.Create(e.P(rel), "", task.Persistent)
	}
}

// Stat returns path's Stat via exists, failing the case if it is missing.
func (e *Env) Stat(path string) task.Stat {
	e.T.Helper()
	r := e.C.Do(&task.ExistsRequest{Path: path})
	if r.Err != nil {
		e.T.Fatalf("exists %s: %v", path, r.Err)
	}
	return r.Stat
}

// Exists reports whether path exists (seen by e.C).
func (e *Env) Exists(path string) bool {
	e.T.Helper()
	r := e.C.Do(&task.ExistsRequest{Path: path})
	if r.Err != nil && r.Err != task.ErrNoNode {
		e.T.Fatalf("exists %s: %v", path, r.Err)
	}
	return r.Err == nil
}

// Set writes data with AnyVersion and returns the new Stat.
func (e *Env) Set(path, data string) task.Stat {
	e.T.Helper()
	r := e.C.Do(&task.SetDataRequest{Path: path, Data: []byte(data), Version: task.AnyVersion})
	if r.Err != nil {
		e.T.Fatalf("set %s: %v", path, r.Err)
	}
	return r.Stat
}

// Delete deletes path with AnyVersion.
func (e *Env) Delete(path string) {
	e.T.Helper()
	if r := e.C.Do(&task.DeleteRequest{Path: path, Version: task.AnyVersion}); r.Err != nil {
		e.T.Fatalf("delete %s: %v", path, r.Err)
	}
}

// Err checks that err is want (errors.Is; nil means success).
func (e *Env) Err(err, want error, what string) {
	e.T.Helper()
	if want == nil {
		if err != nil {
			e.T.Errorf("%s: unexpected error %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		e.T.Errorf("%s: error %v, want %v", what, err, want)
	}
}

// Eq checks got == want (reflect.DeepEqual).
func (e *Env) Eq(got, want any, what string) {
	e.T.Helper()
	if !reflect.DeepEqual(got, want) {
		e.T.Errorf("%s: got %v, want %v", what, got, want)
	}
}

// True checks cond.
func (e *Env) True(cond bool, format string, args ...any) {
	e.T.Helper()
	if !cond {
		e.T.Errorf("%s", fmt.Sprintf(format, args...))
	}
}

// Need returns the target as capability C, or skips the case.
func Need[C any](e *Env) C {
	e.T.Helper()
	c, ok := e.Target.(C)
	if !ok {
		var zero C
		e.T.Skipf("target lacks %T", &zero)
	}
	return c
}

// NoEvents checks, after a barrier, that w has not fired.
func (e *Env) NoEvents(c *Client, w *Watch, what string) {
	e.T.Helper()
	c.Barrier()
	if evs := w.Events(); len(evs) != 0 {
		e.T.Errorf("%s: watch fired %v, want nothing", what, evs)
	}
}

// OneEvent checks, after a barrier, that w fired exactly once with typ on path.
func (e *Env) OneEvent(c *Client, w *Watch, typ task.EventType, path string) {
	e.T.Helper()
	w.Wait()
	c.Barrier()
	evs := w.Events()
	if len(evs) != 1 {
		e.T.Errorf("watch fired %d times (%v), want once", len(evs), evs)
		return
	}
	if evs[0].Type != typ || evs[0].Path != path {
		e.T.Errorf("watch got %s %s, want %s %s", evs[0].Type, evs[0].Path, typ, path)
	}
}
