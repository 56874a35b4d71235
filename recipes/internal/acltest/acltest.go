// Package acltest checks, in the recipes' tests, that a recipe creates
// every node with the ACL its task.ACLProvider gives for the node's path:
// Recorder wraps a client's connection and records the ACL of every create
// it sends, alone or inside a multi; Provider answers an ACL that differs
// from task.OpenACL and from path to path; Mismatches lists the creates
// whose ACL is not the provider's for their path.
//
// A recipe's ACL test runs the recipe's flows with Provider as its ACL
// option and expects no mismatch, then runs them again without the option
// and expects a mismatch for every create: the second run is what an
// ignored option would give, so it shows the first would catch one.
//
// TryAfterRefusedRelease drives a lock-like Client whose Release an ACL
// refuses, then tries again once the ACL is back.
package acltest

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// Create is one create a Recorder saw.
type Create struct {
	Path    string // as sent: a sequential node's prefix
	ACL     []task.ACL
	InMulti bool
}

// Recorder is a task.Conn that records the creates sent through it and
// passes every call on to the Conn it wraps (Follow too, when that Conn
// is a task.SessionFollower). It is safe for concurrent use.
type Recorder struct {
	task.Conn
	mu      sync.Mutex
	creates []Create
}

// Wrap returns a Recorder around conn.
func Wrap(conn task.Conn) *Recorder { return &Recorder{Conn: conn} }

// Do implements task.Conn.
func (r *Recorder) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	r.mu.Lock()
	switch q := req.(type) {
	case *task.CreateRequest:
		r.creates = append(r.creates, Create{Path: q.Path, ACL: slices.Clone(q.ACL)})
	case *task.MultiRequest:
		for _, op := range q.Ops {
			if cr, ok := op.(*task.CreateRequest); ok {
				r.creates = append(r.creates, Create{Path: cr.Path, ACL: slices.Clone(cr.ACL), InMulti: true})
			}
		}
	}
	r.mu.Unlock()
	r.Conn.Do(req, done, watch)
}

// Follow implements task.SessionFollower when the wrapped Conn does.
func (r *Recorder) Follow(session int64) {
	if f, ok := r.Conn.(task.SessionFollower); ok {
		f.Follow(session)
	}
}

// Creates returns the creates recorded so far, in the order sent.
func (r *Recorder) Creates() []Create {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.creates)
}

// Provider is a task.ACLProvider whose answer differs from task.OpenACL
// and from one path to another: every permission to world:anyone (so that
// a server enforcing ACLs lets the recipe do all it does under the open
// ACL), and read to a digest identity named after the path.
func Provider(path string) []task.ACL {
	h := fnv.New64a()
	h.Write([]byte(path))
	user := fmt.Sprintf("acltest-%016x", h.Sum64())
	sum := sha1.Sum([]byte(user + ":secret"))
	return []task.ACL{
		{Perms: task.PermAll, Scheme: "world", ID: "anyone"},
		{Perms: task.PermRead, Scheme: "digest", ID: user + ":" + base64.StdEncoding.EncodeToString(sum[:])},
	}
}

// Mismatches returns one line for each create whose ACL is not what p
// gives for its path (p nil: task.OpenACL).
func Mismatches(creates []Create, p task.ACLProvider) []string {
	var out []string
	for _, c := range creates {
		if want := p.For(c.Path); !slices.Equal(c.ACL, want) {
			where := "create"
			if c.InMulti {
				where = "create in a multi"
			}
			out = append(out, fmt.Sprintf("%s %s: ACL %v, want %v", where, c.Path, c.ACL, want))
		}
	}
	return out
}

// Check runs a recipe's flows twice through run, which builds a fresh
// world, runs the flows on it with acl as the recipe's ACL option and
// returns the creates its Recorders saw. With Provider, t fails unless
// every create carries Provider's ACL for its path and, for each path in
// want, some create has it (a path ending in "*": some create's path
// starts with what comes before the star), so that the flows reached the
// nodes the test means to cover: ancestors, multis, sequential nodes.
// With nil, the option left out as an ignored option would be, every
// create must carry another ACL: otherwise the first run could not tell.
func Check(t *testing.T, want []string, run func(t *testing.T, acl task.ACLProvider) []Create) {
	t.Helper()
	with := run(t, Provider)
	for _, m := range Mismatches(with, Provider) {
		t.Error(m)
	}
	for _, w := range want {
		match := func(c Create) bool { return c.Path == w }
		if p, ok := strings.CutSuffix(w, "*"); ok {
			match = func(c Create) bool { return strings.HasPrefix(c.Path, p) }
		}
		if !slices.ContainsFunc(with, match) {
			t.Errorf("no create under %s among the %d recorded", w, len(with))
		}
	}
	without := run(t, nil)
	if len(without) == 0 {
		t.Fatal("without the option: no create recorded")
	}
	if n := len(Mismatches(without, Provider)); n != len(without) {
		t.Errorf("without the option, %d of %d creates carry the provider's ACL all the same: the check cannot see an ignored option",
			len(without)-n, len(without))
	}
}

// Recorders returns a function for sim.Config.Wrap (C is *fakezk.Conn)
// that wraps every client connection in a Recorder, and a function that
// returns the creates of every Recorder made so far, client by client.
func Recorders[C task.Conn]() (wrap func(i int, conn C) task.Conn, creates func() []Create) {
	var (
		mu   sync.Mutex
		recs []*Recorder
	)
	wrap = func(_ int, conn C) task.Conn {
		r := Wrap(conn)
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
		return r
	}
	creates = func() []Create {
		mu.Lock()
		defer mu.Unlock()
		var all []Create
		for _, r := range recs {
			all = append(all, r.Creates()...)
		}
		return all
	}
	return wrap, creates
}

// Running returns an executor made from cfg and running on a goroutine of
// its own until the test ends (for the recipes' blocking APIs).
func Running(t *testing.T, cfg executor.Config) *executor.Executor {
	t.Helper()
	ex, err := executor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	return ex
}
