package partition_test

import (
	"fmt"
	"slices"

	"github.com/zkflow/zkflow/recipes/partition"
)

// believers counts, for each item, the members that believe they hold it
// among those a simulation judges (the live ones), from the members'
// Change reports: a member's Hold changes only with a report, and a report
// that changes the items held calls the member's on. The oneHolder judges
// run at every request; with the counts they look at a member's holds
// and the server only for an item that two live members count for.
// Not safe for concurrent use: the caller locks.
type believers struct {
	counts map[string]int
}

// believer is one member's entry: the items its last report held.
type believer struct {
	items  []string
	tokens map[string]int64 // the token of each item held at the last report
	spare  map[string]int64 // the one before: report's next tokens, cleared
	state  partition.State  // the last report's (Allocating before any)
	held   []partition.Hold // the last report's Held
	live   bool
}

func newBelievers() *believers { return &believers{counts: map[string]int{}} }

// report records a Change of b's member. It returns what is wrong with
// the report against the one before it (empty if nothing): the package
// doc's Change says Acquired and Released are the items taken and given
// up since the previous report, so every item held now and not then (or
// held now under another token: given up and taken again) is in
// Acquired, every item held then and not now (or under another token) is
// in Released, and neither lists anything else. And a report Acquired
// after one Acquired holds what that one held: Acquired is the party
// unchanged for Stable and every item of the member's assignment held, so
// the items held move only through Allocating (a party changed, a hold
// lost and taken again, a drain ended).
func (bs *believers) report(b *believer, ch partition.Change) string {
	was := b.state
	b.state, b.held = ch.State, ch.Held
	bs.add(b, -1)
	b.items = b.items[:0]
	prev := b.tokens
	if b.tokens = b.spare; b.tokens == nil {
		b.tokens = make(map[string]int64, len(ch.Held))
	}
	clear(b.tokens)
	defer func() { b.spare = prev }() // read only here: the next report's
	var wrong []string
	for _, h := range ch.Held {
		b.items = append(b.items, h.Item)
		b.tokens[h.Item] = h.Token
		tok, had := prev[h.Item]
		taken := slices.Contains(ch.Acquired, h.Item)
		switch {
		case !had && !taken:
			wrong = append(wrong, fmt.Sprintf("%s held (token %d) and not in Acquired", h.Item, h.Token))
		case had && tok != h.Token && (!taken || !slices.Contains(ch.Released, h.Item)):
			wrong = append(wrong, fmt.Sprintf("%s held under token %d, was %d: not both Released and Acquired", h.Item, h.Token, tok))
		case had && tok == h.Token && taken:
			wrong = append(wrong, fmt.Sprintf("%s in Acquired while held under the same token %d", h.Item, tok))
		}
	}
	bs.add(b, 1)
	for _, it := range ch.Acquired {
		if _, ok := b.tokens[it]; !ok {
			wrong = append(wrong, fmt.Sprintf("%s in Acquired and not held", it))
		}
	}
	for _, it := range ch.Released {
		tok, had := prev[it]
		if !had {
			wrong = append(wrong, fmt.Sprintf("%s in Released and not held before", it))
		} else if now, ok := b.tokens[it]; ok && now == tok {
			wrong = append(wrong, fmt.Sprintf("%s in Released and still held under token %d", it, tok))
		}
	}
	for it := range prev {
		if _, ok := b.tokens[it]; !ok && !slices.Contains(ch.Released, it) {
			wrong = append(wrong, fmt.Sprintf("%s no longer held and not in Released", it))
		}
	}
	if was == partition.Acquired && ch.State == partition.Acquired && (len(ch.Acquired) > 0 || len(ch.Released) > 0) {
		wrong = append(wrong, "from Acquired to Acquired with the items held changed")
	}
	if len(wrong) == 0 {
		return ""
	}
	slices.Sort(wrong)
	return fmt.Sprintf("report %v (Acquired %v, Released %v): %v", ch.State, ch.Acquired, ch.Released, wrong)
}

// differs says how held differs from b's last report (empty if not).
func (b *believer) differs(held []partition.Hold) string {
	if len(held) != len(b.tokens) {
		return fmt.Sprintf("%d items held", len(b.tokens))
	}
	for _, h := range held {
		if tok, ok := b.tokens[h.Item]; !ok || tok != h.Token {
			return fmt.Sprintf("%s held under token %d (report: %v)", h.Item, h.Token, b.tokens)
		}
	}
	return ""
}

// setLive counts b's items (live) or stops counting them.
func (bs *believers) setLive(b *believer, live bool) {
	if b == nil || b.live == live {
		return
	}
	if !live {
		bs.add(b, -1)
	}
	b.live = live
	bs.add(b, 1)
}

func (bs *believers) add(b *believer, d int) {
	if !b.live {
		return
	}
	for _, it := range b.items {
		bs.counts[it] += d
	}
}

// contested reports whether two live members or more believe they hold it.
func (bs *believers) contested(it string) bool { return bs.counts[it] >= 2 }
