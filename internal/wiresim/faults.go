package wiresim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Class is a kind of fault injected on the wire.
type Class uint8

const (
	// Drop closes the session's link (fakezk.Server.Drop); requests in
	// flight are not applied.
	Drop Class = iota
	// DropApplied closes the link after applying the requests in flight:
	// their replies are lost (connection loss, outcome unknown).
	DropApplied
	// Partition cuts the session off for less than its timeout
	// (fakezk.Server.Partition): the client reconnects to the same session.
	Partition
	// LongPartition cuts it off for longer than its timeout: the session
	// expires on the server and the client learns it when it reconnects.
	LongPartition
	// Expire ends the session at once (fakezk.Server.Expire).
	Expire
	// Delay holds every delivery to the session for a while
	// (fakezk.Server.Delay).
	Delay
	// Restart stops the server and starts it again (fakezk.Server.Restart):
	// every link closes, sessions live on.
	Restart
	// CutMidFrame truncates the client's next write half-way and closes
	// its TCP connection: the server reads half a frame, then EOF.
	CutMidFrame
	// CutAfterFrame closes the client's TCP connection right after its
	// next write: the server reads the whole request (and applies it)
	// while its reply has nowhere to go.
	CutAfterFrame
	// StallRead stops the server's reading of the client's connection for
	// a while, just after it has read what the client sent last: longer
	// than the client waits for a reply (two thirds of the session
	// timeout, go-zookeeper), the client resumes its session on a new
	// connection while the old one still holds requests the server read
	// and has not served; shorter, they are only late.
	StallRead
	// Silence holds both directions of the client's connection for a
	// while (a silent partition of that TCP path): the server reads
	// nothing from the client, the client nothing from the server, and
	// neither is told; what each wrote arrives when it ends, as TCP's
	// retransmissions would bring it. The server expires the session a
	// timeout after the last packet it read; zkadapter gives the
	// connection up two-thirds of a timeout after the last ping the
	// server answered was sent, and resumes the session on a new
	// connection if the server has not expired it.
	Silence
	numClasses
)

var classNames = [numClasses]string{"drop", "drop-applied", "partition", "long-partition", "expire", "delay", "restart", "cut-mid-frame", "cut-after-frame", "stall-read", "silence"}

func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", c)
}

// Classes is a set of fault classes.
type Classes uint32

// AllClasses is every fault class.
const AllClasses = Classes(1<<numClasses - 1)

// Of returns the set of the given classes.
func Of(cs ...Class) Classes {
	var s Classes
	for _, c := range cs {
		s |= 1 << c
	}
	return s
}

// Has reports whether c is in s.
func (s Classes) Has(c Class) bool { return s&(1<<c) != 0 }

func (s Classes) list() []Class {
	var out []Class
	for c := range numClasses {
		if s.Has(c) {
			out = append(out, c)
		}
	}
	return out
}

// Fault is one fault of a seed's schedule: what, when (since the workload
// started, on the server's clock), on which client's session, and for how
// long (partitions, delays, restarts).
type Fault struct {
	At     time.Duration
	Class  Class
	Client int
	For    time.Duration
	// Applied: a partition applies the requests in flight (their
	// replies are lost) rather than dropping them.
	Applied bool
}

func (f Fault) String() string {
	s := fmt.Sprintf("%dms %s client %d", f.At.Milliseconds(), f.Class, f.Client)
	if f.For > 0 {
		s += fmt.Sprintf(" for %dms", f.For.Milliseconds())
	}
	if f.Applied {
		s += " applied"
	}
	return s
}

// Plan is a seed's schedule of faults, in time order.
type Plan []Fault

func (p Plan) String() string {
	if len(p) == 0 {
		return "no fault"
	}
	parts := make([]string, len(p))
	for i, f := range p {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// drawPlan draws the schedule of a seed: no fault for one seed in
// sixteen, else one to MaxFaults faults at instants of the workload's
// Duration, each of an allowed class, on a client, with a length drawn
// against the session timeout.
func drawPlan(sc *Scenario, seed uint64) Plan {
	rng := rand.New(rand.NewPCG(seed, 0x5749_5245_504c_414e))
	allowed := sc.Faults.list()
	if len(allowed) == 0 || rng.IntN(16) == 0 {
		return nil
	}
	n := 1 + rng.IntN(sc.MaxFaults)
	plan := make(Plan, 0, n)
	timeout := sc.SessionTimeout
	for range n {
		f := Fault{At: time.Duration(rng.Int64N(int64(sc.Duration))), Class: allowed[rng.IntN(len(allowed))], Client: rng.IntN(sc.Clients)}
		switch f.Class {
		case Partition:
			f.For = sc.TickTime + time.Duration(rng.Int64N(int64(timeout/2)))
			f.Applied = rng.IntN(2) == 0
		case LongPartition:
			f.For = timeout + sc.TickTime + time.Duration(rng.Int64N(int64(timeout)))
			f.Applied = rng.IntN(2) == 0
		case Delay:
			f.For = time.Millisecond + time.Duration(rng.Int64N(int64(timeout/2)))
		case Restart:
			f.For = time.Duration(rng.Int64N(int64(timeout / 2)))
		case StallRead:
			f.For = timeout/2 + time.Duration(rng.Int64N(int64(timeout)))
		case Silence:
			f.For = timeout/3 + time.Duration(rng.Int64N(int64(timeout)))
		}
		plan = append(plan, f)
	}
	slices.SortStableFunc(plan, func(a, b Fault) int { return int(a.At - b.At) })
	return plan
}
