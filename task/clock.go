package task

import (
	"time"

	bclock "github.com/benbjohnson/clock"
)

// Clock is the time source of an executor and everything it runs. Nothing
// in this module reads the wall clock except through a Clock.
//
// It is smaller than github.com/benbjohnson/clock's interface on purpose:
// that interface returns its own concrete *Timer, which only its own Mock
// can drive, and Mock.Add sleeps a millisecond of real time per call. A
// simulation advancing time thousands of times must not pay that, so
// simulation clocks (fakezk's) implement this interface directly, and
// FromClock adapts any benbjohnson clock (real or mock) to it.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f, on a goroutine of the clock's choosing, once d has
	// passed. f must not block.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it did.
	Stop() bool
}

// RealClock returns the wall clock.
func RealClock() Clock { return FromClock(bclock.New()) }

// FromClock adapts a github.com/benbjohnson/clock Clock (clock.New() or
// clock.NewMock()) to Clock.
func FromClock(c bclock.Clock) Clock { return bclockAdapter{c} }

type bclockAdapter struct{ c bclock.Clock }

func (a bclockAdapter) Now() time.Time { return a.c.Now() }

func (a bclockAdapter) AfterFunc(d time.Duration, f func()) Timer {
	return a.c.AfterFunc(d, f)
}
