package fakezk_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
)

// BenchmarkClockAfterFunc arms timers and fires them, a few at a time,
// as a simulation's executors do.
func BenchmarkClockAfterFunc(b *testing.B) {
	c := fakezk.NewClock(time.Time{})
	f := func() {}
	b.ReportAllocs()
	for i := range b.N {
		c.AfterFunc(time.Duration(i%7)*time.Millisecond, f)
		if i%8 == 7 {
			c.Advance(10 * time.Millisecond)
		}
	}
}
