package difftest

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkflow/zkflow/task"
)

// Session is one started task.Conn: it records the session's id and the
// watch events delivered to it, tagged with the op that set the watch.
type Session struct {
	c       task.Conn
	timeout time.Duration

	mu      sync.Mutex
	id      int64
	up      chan struct{}
	upOnce  sync.Once
	bad     []task.Event // session events after the first Connected
	watches []string     // watch events not yet collected
}

// Start starts c and waits (at most timeout) until its session is usable.
// timeout also bounds every later wait for a completion.
func Start(c task.Conn, timeout time.Duration) (*Session, error) {
	s := &Session{c: c, timeout: timeout, up: make(chan struct{})}
	if err := c.Start(s.onEvent); err != nil {
		return nil, err
	}
	select {
	case <-s.up:
		return s, nil
	case <-time.After(timeout):
		c.Close()
		return nil, errors.New("difftest: no session within " + timeout.String())
	}
}

func (s *Session) onEvent(ev task.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.State == task.StateConnected && s.id == 0 {
		s.id = ev.SessionID
		s.upOnce.Do(func() { close(s.up) })
		return
	}
	if ev.State != task.StateClosed {
		s.bad = append(s.bad, ev)
	}
}

// ID is the session's id.
func (s *Session) ID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// Close closes the Conn.
func (s *Session) Close() error { return s.c.Close() }

// do runs req and waits for its completion; watch events go to the log
// tagged with tag.
func (s *Session) do(req task.Request, tag string) (task.Response, error) {
	ch := make(chan task.Response, 1)
	var watch func(task.Event)
	if task.WatchRequested(req) {
		watch = func(ev task.Event) {
			s.mu.Lock()
			s.watches = append(s.watches, fmt.Sprintf("%s %s %s", tag, ev.Type, ev.Path))
			s.mu.Unlock()
		}
	}
	s.c.Do(req, func(r task.Response) { ch <- r }, watch)
	select {
	case r := <-ch:
		return r, nil
	case <-time.After(s.timeout):
		return task.Response{}, fmt.Errorf("difftest: %s: no completion within %s", describe(req), s.timeout)
	}
}

// collect returns and clears the watch events so far; an error if the
// session left Connected.
func (s *Session) collect() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bad) > 0 {
		return nil, fmt.Errorf("difftest: session %#x: unexpected session events %v", s.id, s.bad)
	}
	w := s.watches
	s.watches = nil
	return w, nil
}

// Side is one implementation under test: its sessions, in the order ops
// number them.
type Side struct {
	Name     string
	Sessions []*Session
}

// Divergence is the first op of a sequence whose normalized results differ.
type Divergence struct {
	Seed  uint64
	Index int // op index in the sequence (0 creates the root)
	Op    Op
	A, B  string // the normalized results
	Names [2]string
	Ops   []Op // the sequence up to and including the op
}

func (d *Divergence) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: divergence at op %d: %s\n", d.Seed, d.Index, d.Op)
	fmt.Fprintf(&b, "  %s:\n    %s\n", d.Names[0], strings.ReplaceAll(d.A, "\n", "\n    "))
	fmt.Fprintf(&b, "  %s:\n    %s\n", d.Names[1], strings.ReplaceAll(d.B, "\n", "\n    "))
	b.WriteString("  sequence:\n")
	for i, op := range d.Ops {
		fmt.Fprintf(&b, "    %3d %s\n", i, op)
	}
	return b.String()
}

// Run applies ops to both sides, one op at a time on each (A then B), and
// returns the first divergence, or an error if a side failed to answer or
// lost its session (which is not a divergence but a broken run).
func Run(seed uint64, ops []Op, a, b *Side) (*Divergence, error) {
	for i, op := range ops {
		ra, err := a.step(i, op)
		if err != nil {
			return nil, fmt.Errorf("seed %d op %d (%s) on %s: %w", seed, i, op, a.Name, err)
		}
		rb, err := b.step(i, op)
		if err != nil {
			return nil, fmt.Errorf("seed %d op %d (%s) on %s: %w", seed, i, op, b.Name, err)
		}
		if ra != rb {
			return &Divergence{Seed: seed, Index: i, Op: op, A: ra, B: rb, Names: [2]string{a.Name, b.Name}, Ops: ops[:i+1]}, nil
		}
	}
	return nil, nil
}

// step runs op on its session, then a read on every other session so that
// every notification the op triggered has arrived (a server sends a session
// its notifications before the replies to its later requests), and returns
// the normalized result: the response, then the watch events each session
// received, in order, session by session.
func (sd *Side) step(i int, op Op) (string, error) {
	s := sd.Sessions[op.Session]
	resp, err := s.do(op.Req, fmt.Sprintf("w%d", i))
	if err != nil {
		return "", err
	}
	for j, o := range sd.Sessions {
		if j == op.Session {
			continue
		}
		r, err := o.do(&task.ExistsRequest{Path: "/"}, "")
		if err != nil {
			return "", err
		}
		if r.Err != nil {
			return "", fmt.Errorf("barrier on session %d: %w", j, r.Err)
		}
	}
	var b strings.Builder
	b.WriteString(sd.normalize(resp))
	for j, o := range sd.Sessions {
		evs, err := o.collect()
		if err != nil {
			return "", err
		}
		for _, e := range evs {
			fmt.Fprintf(&b, "\nevent s%d %s", j, e)
		}
	}
	return b.String(), nil
}

func (sd *Side) owner(id int64) string {
	if id == 0 {
		return "-"
	}
	for j, s := range sd.Sessions {
		if s.ID() == id {
			return fmt.Sprintf("s%d", j)
		}
	}
	return "other"
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	var c task.Code
	if errors.As(err, &c) {
		return fmt.Sprintf("%d (%v)", int32(c), c)
	}
	return err.Error()
}

// stat formats a Stat without czxid, mzxid, pzxid, ctime and mtime.
func (sd *Side) stat(st task.Stat) string {
	if st == (task.Stat{}) {
		return "{}"
	}
	return fmt.Sprintf("{v=%d cv=%d av=%d owner=%s len=%d kids=%d}",
		st.Version, st.Cversion, st.Aversion, sd.owner(st.EphemeralOwner), st.DataLength, st.NumChildren)
}

func data(b []byte) string {
	if len(b) <= 16 {
		return fmt.Sprintf("%q", b)
	}
	h := fnv.New64a()
	h.Write(b)
	return fmt.Sprintf("<%d bytes %x>", len(b), h.Sum64())
}

func (sd *Side) normalize(r task.Response) string {
	var b strings.Builder
	fmt.Fprintf(&b, "err=%s path=%q stat=%s data=%s", errString(r.Err), r.Path, sd.stat(r.Stat), data(r.Data))
	if r.Children != nil {
		kids := slices.Clone(r.Children)
		slices.Sort(kids)
		fmt.Fprintf(&b, " children=%v", kids)
	}
	for k, m := range r.Results {
		fmt.Fprintf(&b, "\n  [%d] err=%s rolledback=%v path=%q stat=%s", k, errString(m.Err), m.RolledBack, m.Path, sd.stat(m.Stat))
	}
	return b.String()
}

// Stats counts what a Compare run did.
type Stats struct {
	Seqs, Ops int
}

// Compare runs count sequences of about opsPerSeq ops (opsPerSeq-5 to
// opsPerSeq+5), seeds first, first+1, ..., on a and b, and returns the
// counts and the first divergence.
func Compare(first uint64, count, opsPerSeq int, a, b *Side) (Stats, *Divergence, error) {
	var st Stats
	n := len(a.Sessions)
	if len(b.Sessions) != n {
		return st, nil, errors.New("difftest: sides with different numbers of sessions")
	}
	for k := range count {
		seed := first + uint64(k)
		ops := Generate(seed, opsPerSeq-5+int(seed%11), n)
		d, err := Run(seed, ops, a, b)
		if err != nil {
			return st, nil, err
		}
		st.Seqs++
		if d != nil {
			st.Ops += d.Index + 1
			return st, d, nil
		}
		st.Ops += len(ops)
	}
	return st, nil, nil
}
