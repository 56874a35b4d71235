package netproxy

import (
	"syscall"
	"time"
)

// threadSleep is the last stretch of a wait for a chunk's due time that
// is slept on the thread (nanosleep) instead of on a runtime timer. When
// the process has nothing else to do, the Go runtime waits for its next
// timer in the network poller, whose timeout on Linux is in whole
// milliseconds: a timer of half a millisecond fires after about a
// millisecond, which would turn a 500µs delay into twice that. nanosleep
// wakes within tens of microseconds. The thread is blocked meanwhile (the
// runtime lets other goroutines run on other threads), and stop is not
// watched for that stretch: a link that stops waits at most this long.
const threadSleep = 2 * time.Millisecond

// waitUntil waits until due, or until stop closes; it reports false if
// stop closed first. timer is the caller's, reused from one call to the
// next (nil until the first wait that needs one).
func waitUntil(due time.Time, stop <-chan struct{}, timer **time.Timer) bool {
	if wait := time.Until(due) - threadSleep; wait > 0 {
		if *timer == nil {
			*timer = time.NewTimer(wait)
		} else {
			(*timer).Reset(wait)
		}
		select {
		case <-(*timer).C:
		case <-stop:
			return false
		}
	}
	for {
		wait := time.Until(due)
		if wait <= 0 {
			break
		}
		ts := syscall.NsecToTimespec(int64(wait))
		if err := syscall.Nanosleep(&ts, nil); err != nil && err != syscall.EINTR {
			break // cannot sleep: write now rather than spin
		}
	}
	select {
	case <-stop:
		return false
	default:
		return true
	}
}
