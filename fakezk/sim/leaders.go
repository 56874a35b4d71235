package sim

import (
	"fmt"
	"time"

	"github.com/zkflow/zkflow/fakezk"
)

// Leaders checks that at most one client acts as leader at any simulated
// instant. A client calls Begin when it starts acting (before its first
// act as leader) and End when it stops (before or when it learns it may
// have lost the role). Intervals are on the world's clock; two intervals
// that touch (one ends at the instant the other begins) do not overlap.
//
// # Pauses
//
// A leader can keep "never two acting leaders" only while it runs in
// time: it must hear of its disconnect, and give up, before the server
// could expire its session. A clock jump (the ClockJump fault) moves
// time on for the server, whose timers expire sessions, while no client
// runs: every client is paused for the length of the jump, and a leader
// paused past its margin acts on after another was granted the role. No
// election can prevent that; what must hold then is fencing (judge the
// writes with Fencing). So Begin does not judge an overlap with a client
// that has acted across clock jumps adding up to more than Margin; it
// counts it in Excused instead.
type Leaders struct {
	w      *World
	acting map[int]time.Time
	terms  int
	// Margin is how long a leader may be paused (the clock jumps while it
	// acts) and still be judged: set it to the recipe's margin between
	// giving up and the server's expiry, less the longest delivery delay
	// of the scenario. Zero excuses an overlap after any jump.
	Margin time.Duration
	// Excused counts the overlaps not judged because of a pause.
	Excused int
}

// NewLeaders returns a checker reading times from w's clock.
func NewLeaders(w *World) *Leaders { return &Leaders{w: w, acting: map[int]time.Time{}} }

// Begin records that client starts acting as leader; it fails if another
// client is acting, unless that client was paused past Margin.
func (l *Leaders) Begin(client int) error {
	now := l.w.Clock.Now()
	l.terms++
	for _, other := range sortedKeys(l.acting) {
		if other == client {
			continue
		}
		since := l.acting[other]
		if paused := l.w.Jumped(since, now); paused > l.Margin {
			l.Excused++
			continue
		}
		return fmt.Errorf("client %d acts as leader at %s while client %d has acted since %s",
			client, now.Sub(epoch()), other, since.Sub(epoch()))
	}
	if _, ok := l.acting[client]; !ok {
		l.acting[client] = now
	}
	return nil
}

// End records that client stopped acting as leader.
func (l *Leaders) End(client int) { delete(l.acting, client) }

// Acting returns the clients acting now, sorted.
func (l *Leaders) Acting() []int { return sortedKeys(l.acting) }

// Terms is the number of Begin calls.
func (l *Leaders) Terms() int { return l.terms }

func epoch() time.Time { return fakezk.Epoch }
