package task

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

var scopeSeed = flag.Uint64("scope.seed", 0, "seed of TestCancelReachesEveryScopeRandom (0: a fresh one)")

// stubRuntime is the least a Scope needs: a task queue the test drains by
// hand, no connection, no timers.
type stubRuntime struct {
	Frames
	queue []func()
	root  *Scope
}

func (r *stubRuntime) Clock() Clock                      { return nil }
func (r *stubRuntime) Schedule(fn func())                { r.queue = append(r.queue, fn) }
func (r *stubRuntime) AfterFunc(time.Time, func()) Timer { panic("stubRuntime: no timers") }
func (r *stubRuntime) Send(Request, Receiver, Watcher) {
	panic("stubRuntime: no connection")
}
func (r *stubRuntime) Current() (Session, State)    { return Session{ID: 1, Epoch: 1}, StateConnected }
func (r *stubRuntime) SessionScope() *Scope         { return r.root }
func (r *stubRuntime) Subscribe(func(Event)) func() { return func() {} }
func (r *stubRuntime) Rand() uint64                 { return 0 }
func (r *stubRuntime) Report(error)                 {}

func newStubRoot() (*stubRuntime, *Scope) {
	rt := &stubRuntime{}
	rt.root = NewSessionScope(rt, &Session{ID: 1, Epoch: 1})
	return rt, rt.root
}

// drain runs what the scopes scheduled (deferred cleanups, say) until
// nothing is left.
func (r *stubRuntime) drain() {
	for len(r.queue) > 0 {
		fn := r.queue[0]
		r.queue = r.queue[1:]
		r.depth = 0
		fn()
	}
}

// The losing branch of a race: canceling one child runs a callback that
// closes its next sibling. Every other child, older ones included, must
// still be canceled.
func TestCancelSurvivesSiblingClosedDuringCancel(t *testing.T) {
	_, root := newStubRoot()
	p := root.Child()
	oldest := p.Child()
	loser := p.Child()
	winner := p.Child() // the head of p's children: canceled first
	winner.OnDone(func(error) { loser.Close() })
	p.Cancel(nil)
	for name, s := range map[string]*Scope{"oldest": oldest, "loser": loser, "winner": winner} {
		if s.Err() == nil {
			t.Errorf("%s child not canceled", name)
		}
	}
	if !errors.Is(oldest.Err(), ErrCanceled) {
		t.Errorf("oldest child ended with %v, want ErrCanceled", oldest.Err())
	}
}

// Variants of the same hole, one per thing a callback may do to the
// scope the walk would visit next.
func TestCancelDirected(t *testing.T) {
	cases := []struct {
		name string
		// act runs in the OnDone callback of the first child canceled
		// (the newest); kids are oldest first.
		act func(p *Scope, kids []*Scope)
	}{
		{"close next sibling", func(p *Scope, k []*Scope) { k[2].Close() }},
		{"close all other siblings", func(p *Scope, k []*Scope) { k[2].Close(); k[1].Close(); k[0].Close() }},
		{"close self and next", func(p *Scope, k []*Scope) { k[3].Close(); k[2].Close() }},
		{"close parent", func(p *Scope, k []*Scope) { p.Close() }},
		{"close parent and next", func(p *Scope, k []*Scope) { p.Close(); k[2].Close() }},
		{"cancel next sibling", func(p *Scope, k []*Scope) { k[2].Cancel(ErrClosed) }},
		{"create sibling and child", func(p *Scope, k []*Scope) { p.Child(); k[2].Child().Child() }},
		{"cancel parent again", func(p *Scope, k []*Scope) { p.Cancel(nil); k[2].Close() }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt, root := newStubRoot()
			p := root.Child()
			kids := make([]*Scope, 4)
			var grandkids []*Scope
			for i := range kids {
				kids[i] = p.Child()
				grandkids = append(grandkids, kids[i].Child(), kids[i].Child())
			}
			kids[3].OnDone(func(error) { tc.act(p, kids) })
			p.Cancel(nil)
			rt.drain()
			for i, s := range append(kids, grandkids...) {
				if s.Err() == nil {
					t.Errorf("scope %d not canceled", i)
				}
			}
			if err := scopeLinksErr(append([]*Scope{root, p}, append(kids, grandkids...)...)...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// scopeNode is a scope of a random tree with what the test knows of it.
type scopeNode struct {
	s      *Scope
	linked bool // linked under its parent when made (the parent was live)
}

// TestCancelReachesEveryScopeRandom builds random scope trees whose
// callbacks (OnDone callbacks, continuations of abandoned waits, cleanups)
// close, cancel and create scopes anywhere in the tree while the root is
// being canceled, and checks that every scope has ended, that no scope is
// linked under a closed parent, and that the sibling lists are sound.
// A failure prints its seed; -scope.seed replays it.
func TestCancelReachesEveryScopeRandom(t *testing.T) {
	seed := *scopeSeed
	iters := 3000
	if seed == 0 {
		seed = rand.Uint64()
	} else {
		iters = 1
	}
	if testing.Short() {
		iters = min(iters, 300)
	}
	t.Logf("seed %d (replay one tree with -run TestCancelReachesEveryScopeRandom -scope.seed=N)", seed)
	for i := range iters {
		s := seed + uint64(i)
		if err := randomCancelTree(s); err != nil {
			t.Fatalf("seed %d: %v\nreplay: go test ./task -run '^TestCancelReachesEveryScopeRandom$' -scope.seed=%d", s, err, s)
		}
	}
}

func randomCancelTree(seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 0))
	rt, root := newStubRoot()
	var nodes []*scopeNode
	budget := 200 // scopes and actions made during cancellation, at most

	var decorate func(n *scopeNode)
	pick := func() *scopeNode { return nodes[rng.IntN(len(nodes))] }
	var act func(self *scopeNode)
	newChild := func(parent *scopeNode) *scopeNode {
		n := &scopeNode{linked: parent.s.Err() == nil}
		if rng.IntN(4) == 0 {
			// Made by RunIn, which closes it when it ends, like every
			// combinator does.
			n.s = parent.s.Child()
			nodes = append(nodes, n)
			RunIn(n.s, Task[Unit](func(s *Scope, k Cont[Unit]) {
				Suspend(s, k, func(Cont[Unit]) func() { return nil })
			}), func(Unit, error) {
				if budget > 0 {
					act(n)
				}
			})
		} else {
			n.s = parent.s.Child()
			nodes = append(nodes, n)
		}
		decorate(n)
		return n
	}
	act = func(self *scopeNode) {
		for range 1 + rng.IntN(3) {
			if budget <= 0 {
				return
			}
			budget--
			switch rng.IntN(9) {
			case 0:
				pick().s.Close()
			case 1:
				pick().s.Cancel(fmt.Errorf("random cancel"))
			case 2:
				newChild(pick())
			case 3: // a sibling of self
				if p := self.s.parent; p != nil {
					newChild(&scopeNode{s: p})
				}
			case 4:
				self.s.Close()
			case 5: // the scope the walk is likely to visit next
				if n := self.s.sibling.next; n != nil {
					n.Close()
				}
			case 6:
				if p := self.s.sibling.prev; p != nil {
					p.Close()
				}
			case 7:
				if p := self.s.parent; p != nil {
					p.Close()
				}
			case 8:
				newChild(self)
			}
		}
	}
	decorate = func(n *scopeNode) {
		for range rng.IntN(3) {
			n.s.OnDone(func(error) { act(n) })
		}
		if rng.IntN(3) == 0 { // a parked chain: its continuation acts
			Run(n.s, Task[Unit](func(s *Scope, k Cont[Unit]) {
				Suspend(s, k, func(Cont[Unit]) func() { return nil })
			}), func(Unit, error) { act(n) })
		}
		if rng.IntN(4) == 0 {
			n.s.Defer(Func(func(*Scope) (Unit, error) { return Unit{}, nil }))
		}
	}

	top := &scopeNode{s: root.Child(), linked: true}
	nodes = append(nodes, top)
	size := 1 + rng.IntN(40)
	saved := budget
	budget = 1 << 30 // building: no limit, and no callback runs yet
	for len(nodes) < size {
		newChild(pick())
	}
	// Some scopes end before the root does.
	for range rng.IntN(4) {
		n := pick()
		if n == top {
			continue
		}
		budget = saved
		if rng.IntN(2) == 0 {
			n.s.Close()
		} else {
			n.s.Cancel(nil)
		}
		saved = budget
	}
	budget = saved
	if rng.IntN(2) == 0 {
		top.s.Cancel(errors.New("root canceled"))
	} else {
		// As the executor ends a session: subscribers act between the
		// two phases, and each sees every scope already ended.
		d := top.s.CancelDeferred(errors.New("root canceled"))
		for range rng.IntN(4) {
			n := pick()
			if n == top {
				continue // its siblings are outside the canceled tree
			}
			if n.s.Err() == nil {
				return fmt.Errorf("a scope live between the phases of its ancestor's cancellation")
			}
			act(n)
		}
		d.Deliver()
	}
	rt.drain()
	for i, n := range nodes {
		if n.s.Err() == nil {
			return fmt.Errorf("scope %d of %d still live after its ancestor was canceled", i, len(nodes))
		}
	}
	for i, n := range nodes {
		if n.linked && !n.s.closed && n.s.parent != nil && !n.s.parent.closed && !isLinked(n.s) {
			return fmt.Errorf("scope %d: open, under an open parent, but not linked in it", i)
		}
	}
	all := []*Scope{root}
	for _, n := range nodes {
		all = append(all, n.s)
	}
	return scopeLinksErr(all...)
}

func isLinked(c *Scope) bool {
	for x := c.parent.children.head; x != nil; x = x.sibling.next {
		if x == c {
			return true
		}
	}
	return false
}

// scopeLinksErr checks the links under each of scopes: children name it
// as parent, the list's prev links agree, no closed scope is linked, a
// closed scope links no child, and no scope is in two lists.
func scopeLinksErr(scopes ...*Scope) error {
	seen := map[*Scope]bool{}
	for _, s := range scopes {
		if s.closed && s.children.head != nil {
			return fmt.Errorf("a closed scope still links children")
		}
		if s.pending != nil {
			return fmt.Errorf("a scope left queued for delivery")
		}
		var prev *Scope
		for c := s.children.head; c != nil; c = c.sibling.next {
			if seen[c] {
				return fmt.Errorf("a scope linked twice (a cycle or two lists)")
			}
			seen[c] = true
			if c.parent != s {
				return fmt.Errorf("a child linked under a scope that is not its parent")
			}
			if c.sibling.prev != prev {
				return fmt.Errorf("sibling list: prev link broken")
			}
			if c.closed {
				return fmt.Errorf("a closed scope is still linked in its parent")
			}
			prev = c
		}
	}
	return nil
}
