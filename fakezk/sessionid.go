package fakezk

import (
	"math/rand/v2"
	"time"
)

// Session ids are shaped like a real ensemble's. A ZooKeeper server
// starts its session counter at
//
//	(currentTimeMillis << 24) >>> 8 | (myid << 56)
//
// (SessionTrackerImpl.initializeNextSession): its id in the high byte,
// the low 40 bits of the time it started in milliseconds (39 here), then 16 bits
// counted up by one for every session it creates. Clients of an ensemble
// connect to any of its servers, so the ids of sessions created one after
// the other are not in creation order: sorted, they group by the server
// that created them.
//
// The fake has one server but hands out ids as an ensemble would: the
// seed draws an ensemble of three or five servers (ids in 1..127, so
// session ids stay positive and nonzero), each started some time (up to
// a month) before the clock's reading at New, and every new session is
// created by one of them drawn from the seed. Ids are deterministic per
// seed, unique over the server's life (a counter only goes up, through
// restarts and wipes), and their order says nothing about which session
// came first: code that orders by session id, or by a full node name
// that carries one, meets the order a real ensemble gives, not creation
// order. The draws come from a stream of their own, so they leave the
// scheduler's choices unchanged.
type sessionIDs struct {
	rng  *rand.Rand
	next []int64 // per virtual server: the next id it hands out
}

func newSessionIDs(seed uint64, now time.Time) sessionIDs {
	rng := rand.New(rand.NewPCG(seed, 0x5e55_1d5))
	n := 3 + 2*rng.IntN(2)
	ids := rand.New(rand.NewPCG(seed, 0x5e55_1d6)).Perm(127)[:n]
	g := sessionIDs{rng: rng, next: make([]int64, n)}
	for i, id := range ids {
		started := now.UnixMilli() - rng.Int64N(int64(30*24*time.Hour/time.Millisecond))
		// The time's low 39 bits, not 40: counting up never carries into
		// the server byte, so the servers' ranges never meet.
		g.next[i] = (started&(1<<39-1))<<16 | int64(id+1)<<56
	}
	return g
}

// take returns a new session id.
func (g *sessionIDs) take() int64 {
	i := g.rng.IntN(len(g.next))
	id := g.next[i]
	g.next[i]++
	return id
}
