package peers

import (
	"flag"
	"io"
	"time"
)

// ParseArgs parses the flags Params.Args writes (for the Go peer program)
// and validates them.
func ParseArgs(args []string) (Params, error) {
	fs := flag.NewFlagSet("peer", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var p Params
	var dur, warm, sess int64
	fs.StringVar(&p.Server, "server", "", "ZooKeeper host:port")
	fs.StringVar(&p.Scenario, "scenario", "", "lock, cas, pipeline, get, set, ...")
	fs.IntVar(&p.Clients, "clients", 1, "clients, a session each")
	fs.Int64Var(&dur, "duration-ms", 0, "measuring time")
	fs.Int64Var(&warm, "warmup-ms", 0, "warm-up time")
	fs.IntVar(&p.Ops, "ops", 0, "operations per client (instead of a duration)")
	fs.StringVar(&p.Path, "path", "", "node to work on")
	fs.StringVar(&p.Marker, "marker", "", "interop marker node")
	fs.IntVar(&p.Leases, "leases", 0, "seminterop: semaphore leases")
	fs.IntVar(&p.Outstanding, "outstanding", 0, "pipeline, get, set: goroutines on one session")
	fs.Int64Var(&sess, "session-timeout-ms", 0, "session timeout")
	if err := fs.Parse(args); err != nil {
		return Params{}, err
	}
	p.Duration, p.Warmup, p.SessionTimeout = ms(dur), ms(warm), ms(sess)
	return p, p.Validate()
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
