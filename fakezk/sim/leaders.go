package sim

import (
	"fmt"
	"github.com/zkflow/zkflow/fakezk"
	"time"
)

// Leaders checks that at most one client acts as leader at any simulated
// instant. A client calls Begin when it starts acting (before its first
// act as leader) and End when it stops (before or when it learns it may
// have lost the role). Intervals are on the world's clock; two intervals
// that touch (one ends at the instant the other begins) do not overlap.
type Leaders struct {
	clock  interface{ Now() time.Time }
	acting map[int]time.Time
	terms  int
}

// NewLeaders returns a checker reading times from w's clock.
func NewLeaders(w *World) *Leaders { return &Leaders{clock: w.Clock, acting: map[int]time.Time{}} }

// Begin records that client starts acting as leader; it fails if another
// client is acting.
func (l *Leaders) Begin(client int) error {
	now := l.clock.Now()
	l.terms++
	for _, other := range sortedKeys(l.acting) {
		if other != client {
			return fmt.Errorf("client %d acts as leader at %s while client %d has acted since %s",
				client, now.Sub(epoch()), other, l.acting[other].Sub(epoch()))
		}
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
