package partition_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// judge holds the simulations' members to what the package doc says of
// a Change and of the Holds it hands out, report by report:
//
//   - a Change is well formed: Held sorted by item, Acquired and Released
//     sorted, each item once; state Ended holds nothing, takes nothing,
//     and is the last report (Member.Held, State: Ended holds nothing);
//     the holds of one report are of one session, the member's now
//     (Member.Session: its holds are of this session or gone);
//   - a hold handed out (an item in Acquired) is a lock node of the
//     item's directory, created by the hold's session, its creation zxid
//     the token, and the lowest contender of the directory (Hold; the
//     doc's Guarantee: "a hold is a lock node, the lowest of the item's
//     lock directory"), as the server has it when the member reports it,
//     unless it is gone already (a hold may end before its report);
//   - a report Acquired holds what the division gives the member among a
//     party the server had Stable before (State Acquired: the party
//     unchanged for Stable, and every item of its assignment held, nothing
//     else): KazooAssign of the identifiers of the party directory's
//     children at some moment at least Stable before the report
//     (partyLog, from the server's journal);
//   - with drained set (partSim, whose members drain every item they give
//     up on a rebalance), every item a member gives up while it lasts has
//     a cause the doc names: its drain ended (a rebalance), its node
//     deleted or written by someone else, or gone with the session, or a
//     fenced write's check of it refused by an operator's ACL (noAuth:
//     Hold.Fenced, that ends the hold). A watch another user of the
//     session removed (RemoveWatches) is none: "nothing it holds or tries
//     ends".
type judge struct {
	p      *partition.Partitioner
	items  []string // p's, sorted
	stable time.Duration
	party  partyLog
	// noAuth: the lock nodes whose check in a fenced write an ACL
	// refused, this seed.
	noAuth map[string]bool
	// drained: the tokens whose drain ended (nil: not judged).
	drained map[int64]bool
	// connected: when a client last (re)connected; up: whether each
	// client is connected now, as its executor heard (judgedConn.Start).
	connected time.Time
	up        []bool
}

// start begins a seed: the party's history from now.
func (j *judge) start(r *sim.Trial, p *partition.Partitioner, stable time.Duration, drains bool) {
	j.p, j.stable, j.items = p, stable, p.Items()
	j.party.start(r, p.Path()+"/party")
	j.noAuth = map[string]bool{}
	j.drained, j.connected = nil, time.Time{}
	j.up = make([]bool, len(r.Execs))
	for i := range j.up {
		j.up[i] = true // New runs the world until every client is connected
	}
	if drains {
		j.drained = map[int64]bool{}
	}
}

// change judges ch, a report of member id (m, if known: nil for a
// report that comes before the caller has the member), whose previous
// report b recorded (before b takes ch). It returns what is wrong.
func (j *judge) change(r *sim.Trial, id string, m *partition.Member, b *believer, ch partition.Change) []string {
	var wrong []string
	if b.state == partition.Ended {
		wrong = append(wrong, "a report after the one that said Ended")
	}
	for k := 1; k < len(ch.Held); k++ {
		if ch.Held[k].Item <= ch.Held[k-1].Item {
			wrong = append(wrong, "Held not sorted by item, or an item held twice")
			break
		}
	}
	if !strictlySorted(ch.Acquired) || !strictlySorted(ch.Released) {
		wrong = append(wrong, "Acquired or Released not sorted, or an item listed twice")
	}
	if ch.State == partition.Ended && (len(ch.Held) > 0 || len(ch.Acquired) > 0) {
		wrong = append(wrong, "Ended with items held or taken")
	}
	var sess int64
	if m != nil {
		sess = m.Session().ID
	}
	for k, h := range ch.Held {
		if k > 0 && h.Session.ID != ch.Held[0].Session.ID {
			wrong = append(wrong, fmt.Sprintf("%s held on session %#x, %s on %#x", h.Item, h.Session.ID, ch.Held[0].Item, ch.Held[0].Session.ID))
		}
		if sess != 0 && h.Session.ID != sess {
			wrong = append(wrong, fmt.Sprintf("%s held on session %#x, the member's is %#x", h.Item, h.Session.ID, sess))
		}
	}
	for _, it := range ch.Acquired {
		if h, ok := heldIn(ch.Held, it); ok {
			if w := j.lowest(r, h); w != "" {
				wrong = append(wrong, w)
			}
		}
	}
	if ch.State == partition.Acquired && len(ch.Held) > 0 {
		if w := j.party.acquired(r.Clock.Now().Add(-j.stable), id, ch.Held, j.items); w != "" {
			wrong = append(wrong, w)
		}
	}
	if j.drained != nil && ch.State != partition.Ended {
		for _, it := range ch.Released {
			if h, ok := heldIn(b.held, it); ok {
				if w := j.causeless(r, h); w != "" {
					wrong = append(wrong, w)
				}
			}
		}
	}
	return wrong
}

// lowest says what is wrong with h, just handed out, against its lock
// node on the server (empty if nothing, or if the node is gone).
func (j *judge) lowest(r *sim.Trial, h partition.Hold) string {
	st, ok := r.NodeStat(h.Path)
	if !ok {
		return ""
	}
	dir := j.p.ItemDir(h.Item)
	name, ok := strings.CutPrefix(h.Path, dir+"/")
	mine, numbered := zkops.SeqAfter(name, "__lock__")
	switch {
	case !ok || strings.Contains(name, "/") || !numbered:
		return fmt.Sprintf("%s held by node %s: not a lock node of %s", h.Item, h.Path, dir)
	case st.Czxid != h.Token:
		return fmt.Sprintf("%s held under token %d, its node %s made at zxid %d", h.Item, h.Token, h.Path, st.Czxid)
	case st.EphemeralOwner != h.Session.ID:
		return fmt.Sprintf("%s held by node %s of session %#x, the hold's session is %#x", h.Item, h.Path, st.EphemeralOwner, h.Session.ID)
	case zkops.Exhausted(mine):
		return fmt.Sprintf("%s held by node %s, numbered where the server can no longer order", h.Item, h.Path)
	}
	for _, n := range r.Children(dir) {
		if seq, ok := zkops.SeqAfter(n, "__lock__"); ok && !zkops.Exhausted(seq) && seq < mine {
			return fmt.Sprintf("%s held (token %d) by node %s while contender %s is below it", h.Item, h.Token, name, n)
		}
	}
	return ""
}

// causeless says what is wrong with hold h given up (reported released)
// by a member that lasts: nothing if its drain ended, its node is gone
// (deleted, or with its session) or was written, or a fenced write's
// check of it was refused by an ACL.
func (j *judge) causeless(r *sim.Trial, h partition.Hold) string {
	if j.drained[h.Token] || j.noAuth[h.Path] {
		return ""
	}
	st, ok := r.NodeStat(h.Path)
	if !ok || st.Czxid != h.Token || st.Version != h.Version {
		return ""
	}
	return fmt.Sprintf("%s (token %d) given up with no cause: no drain ended, its node %s on the server unchanged (version %d), no check of it refused", h.Item, h.Token, h.Path, st.Version)
}

// refused records the path checked by mr, a fenced write, if resp is an
// ACL's refusal of it. (An exists, the member's watch of a hold's node,
// checks no ACL: ZooKeeper's FinalRequestProcessor, and fakezk's.)
func (j *judge) refused(mr *task.MultiRequest, resp task.Response) {
	if j.noAuth == nil || !errors.Is(resp.Err, task.ErrNoAuth) {
		return
	}
	for _, op := range mr.Ops {
		if c, ok := op.(*task.CheckRequest); ok {
			j.noAuth[c.Path] = true
		}
	}
}

// judgedConn is a client's connection (inner, a wrapper of the
// fakezk.Conn whose other methods the executor uses) as the judge sees
// it: the ACL's refusals recorded (judge.refused) before the client
// hears of them.
type judgedConn struct {
	*fakezk.Conn
	inner task.Conn
	j     *judge
	i     int
}

func (c *judgedConn) Start(events func(task.Event)) error {
	return c.Conn.Start(func(ev task.Event) {
		if ev.Type == task.EventNone && c.j.party.clock != nil && c.i < len(c.j.up) {
			c.j.up[c.i] = ev.State == task.StateConnected
			if ev.State == task.StateConnected {
				c.j.connected = c.j.party.clock.Now()
			}
		}
		events(ev)
	})
}

func (c *judgedConn) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	mr, ok := req.(*task.MultiRequest)
	if !ok {
		c.inner.Do(req, done, watch)
		return
	}
	c.inner.Do(req, func(resp task.Response) {
		c.j.refused(mr, resp)
		done(resp)
	}, watch)
}

func heldIn(held []partition.Hold, item string) (partition.Hold, bool) {
	for _, h := range held {
		if h.Item == item {
			return h, true
		}
	}
	return partition.Hold{}, false
}

func strictlySorted(ss []string) bool {
	for k := 1; k < len(ss); k++ {
		if ss[k] <= ss[k-1] {
			return false
		}
	}
	return true
}

// partyLog is the history of the party directory's members on the
// server (the identifiers of its children, sorted), with the instant
// each began, from the server's journal (Journal, set as the scenario's
// Server.Journal; start begins each seed's).
type partyLog struct {
	clock  *fakezk.Clock
	prefix string          // the directory on the server, and "/"
	cur    map[string]bool // its children now
	hist   []partyState
}

type partyState struct {
	from time.Time
	ids  []string
}

func (l *partyLog) start(r *sim.Trial, dir string) {
	l.clock, l.prefix = r.Clock, r.ServerPath(dir)+"/"
	l.cur = map[string]bool{}
	for _, n := range r.Children(dir) {
		l.cur[n] = true
	}
	l.hist = append(l.hist[:0], partyState{from: r.Clock.Now(), ids: l.ids()})
}

func (l *partyLog) ids() []string {
	var ids []string
	for n := range l.cur {
		if k := strings.IndexByte(n, '-'); k >= 0 {
			ids = append(ids, n[k+1:])
		}
	}
	slices.Sort(ids)
	return ids
}

// Journal is for fakezk.Config.Journal.
func (l *partyLog) Journal(c fakezk.Commit) {
	if l.clock == nil {
		return
	}
	changed := false
	for i := range c.Nodes {
		if name, ok := l.child(c.Nodes[i].Path); ok && !l.cur[name] {
			l.cur[name], changed = true, true
		}
	}
	for _, p := range c.Deleted {
		if name, ok := l.child(p); ok && l.cur[name] {
			delete(l.cur, name)
			changed = true
		}
	}
	if changed {
		ids := l.ids()
		if last := &l.hist[len(l.hist)-1]; slices.Equal(last.ids, ids) {
			return // the same members (a node of an identifier made again)
		}
		l.hist = append(l.hist, partyState{from: l.clock.Now(), ids: ids})
	}
}

func (l *partyLog) child(p string) (string, bool) {
	name, ok := strings.CutPrefix(p, l.prefix)
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// acquired says what is wrong (empty if nothing) with member id holding
// held in state Acquired, the party as of at the latest: held must be
// KazooAssign's share of id among the party's members at some instant
// not after by.
func (l *partyLog) acquired(by time.Time, id string, held []partition.Hold, items []string) string {
	if l.clock == nil {
		return ""
	}
	for k := len(l.hist) - 1; k >= 0; k-- {
		st := l.hist[k]
		if st.from.After(by) {
			continue
		}
		want := partition.KazooAssign(id, st.ids, items)
		if len(want) == len(held) && !slices.ContainsFunc(held, func(h partition.Hold) bool { return !slices.Contains(want, h.Item) }) {
			return ""
		}
	}
	var had []string
	for _, st := range l.hist {
		if !st.from.After(by) {
			had = append(had, fmt.Sprint(st.ids))
		}
	}
	if len(had) > 8 {
		had = append([]string{"..."}, had[len(had)-8:]...)
	}
	items2 := make([]string, len(held))
	for k, h := range held {
		items2[k] = h.Item
	}
	return fmt.Sprintf("Acquired holding %v, the share of %s in no party the server had a Stable before (it had, in turn: %s)", items2, id, strings.Join(had, " "))
}

// fenceCounts counts, per token, the fenced writes sent with it, those
// that succeeded and those refused: a success was applied, a refusal
// (ErrLost, ErrNotHeld, an ACL's NoAuth) was not (Hold.Fenced: ZooKeeper
// refuses it, or it is not sent), and any other outcome (connection
// loss, the session's end, a context's) may be either. check holds the
// fencing logs to it at the end of a seed.
type fenceCounts struct {
	sent, applied, refused map[int64]int
}

func (f *fenceCounts) reset() {
	f.sent, f.applied, f.refused = map[int64]int{}, map[int64]int{}, map[int64]int{}
}

// send counts a fenced write of token tok about to be sent (counted
// before: a process that crashes never hears its outcome).
func (f *fenceCounts) send(tok int64) { f.sent[tok]++ }

// done counts the outcome of a write of token tok counted by send.
func (f *fenceCounts) done(tok int64, err error) {
	switch {
	case err == nil:
		f.applied[tok]++
	case errors.Is(err, partition.ErrLost), errors.Is(err, partition.ErrNotHeld), errors.Is(err, task.ErrNoAuth):
		f.refused[tok]++
	}
}

// check compares the fencing logs of items under dir with the outcomes:
// each token has at least as many entries (but "late" ones, judged by
// sim.CheckFencing) as writes that succeeded, and no more than writes
// sent and not refused.
func (f *fenceCounts) check(r *sim.Trial, dir string, items []string) error {
	entries := map[int64]int{}
	for _, it := range items {
		log, err := sim.FenceLog(r.World, dir+"/"+it)
		if err != nil {
			return err
		}
		for _, e := range log {
			if e.Kind != "late" {
				entries[e.Token]++
			}
		}
	}
	for tok, n := range entries {
		if f.sent[tok] == 0 {
			return fmt.Errorf("fence log: %d entries of token %d, which no write was sent with", n, tok)
		}
	}
	for tok, sent := range f.sent {
		n := entries[tok]
		if n < f.applied[tok] {
			return fmt.Errorf("fence log: token %d has %d entries, %d writes of it succeeded", tok, n, f.applied[tok])
		}
		if n > sent-f.refused[tok] {
			return fmt.Errorf("fence log: token %d has %d entries, %d writes of it sent, %d refused (ErrLost, ErrNotHeld, NoAuth: not applied)", tok, n, sent, f.refused[tok])
		}
	}
	return nil
}

// lostWhileHeld says what is wrong (empty if nothing) with a fenced
// write through hold h that failed with err, seen while member m still
// holds h (its Hold of the item has h's token) or, for a drain's write,
// while the drain runs (m nil): ErrLost is the end of the hold (lost,
// or given up), so its node must be gone or changed, or an ACL have
// refused a read of it (this write's check, or an earlier one's, which
// ends the hold as the node's loss does: Hold.Fenced).
//
// And a write whose check an ACL refused (ErrLost wrapping
// task.ErrNoAuth) has ended m's hold h: m no longer holds it.
func (j *judge) lostWhileHeld(r *sim.Trial, m *partition.Member, h partition.Hold, err error) string {
	if !errors.Is(err, partition.ErrLost) {
		return ""
	}
	if errors.Is(err, task.ErrNoAuth) {
		if m == nil || m.Err() != nil {
			return ""
		}
		if cur, ok := m.Hold(h.Item); ok && cur.Token == h.Token {
			return fmt.Sprintf("fenced write through the hold of %s (token %d) refused by an ACL, and the member still holds it: %v", h.Item, h.Token, err)
		}
		return ""
	}
	if j.noAuth[h.Path] {
		return ""
	}
	if m != nil {
		if cur, ok := m.Hold(h.Item); !ok || cur.Token != h.Token || m.Err() != nil {
			return ""
		}
	}
	st, ok := r.NodeStat(h.Path)
	if !ok || st.Czxid != h.Token || st.Version != h.Version {
		return ""
	}
	return fmt.Sprintf("fenced write through the hold of %s (token %d) refused while it stands (its node unchanged on the server): %v", h.Item, h.Token, err)
}

// leftAtOnce says what is wrong (empty if nothing) with member m once a
// Leave of it has returned: Leave ends the member at once (Done closed,
// Err set, state Ended, nothing held).
func leftAtOnce(m *partition.Member) string {
	select {
	case <-m.Done():
	default:
		return "Done not closed"
	}
	switch {
	case m.Err() == nil:
		return "Err nil"
	case m.State() != partition.Ended:
		return fmt.Sprintf("state %v", m.State())
	case len(m.Held()) > 0:
		return fmt.Sprintf("holding %v", m.Held())
	}
	return ""
}
