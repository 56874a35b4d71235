package sim

import (
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// RequestLog is a client's Conn that records what the client sends, for
// tests that count a recipe's requests and round trips: wrap the client
// with it in Config.Wrap.
//
//	var log *sim.RequestLog
//	w, err := sim.New(sim.Config{Seed: 1, Clients: 1, Wrap: func(_ int, c *fakezk.Conn) task.Conn {
//		log = &sim.RequestLog{Conn: c}
//		return log
//	}})
type RequestLog struct {
	*fakezk.Conn
	// Sent is each request sent, in order, as "<op> <path>" (OpName and
	// NodePath), with " (watch)" after a read that sets a watch.
	Sent []string
	// Waiting is, for each request of Sent, how many of the client's
	// requests were waiting for their reply when it was sent.
	Waiting []int
	// Trips counts the round trips: a request sent while none waits for
	// its reply starts one; one sent while others wait shares theirs.
	Trips int
	// Lose, if set, is asked of each request sent: the first it says true
	// of is applied and its reply lost with the connection
	// (fakezk.Server.Drop, applied), and Lose is cleared.
	Lose func(task.Request) bool

	waiting int
}

// Do records req and sends it.
func (c *RequestLog) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	what := req.OpName() + " " + req.NodePath()
	if watch != nil {
		what += " (watch)"
	}
	c.Sent, c.Waiting = append(c.Sent, what), append(c.Waiting, c.waiting)
	if c.waiting == 0 {
		c.Trips++
	}
	c.waiting++
	c.Conn.Do(req, func(r task.Response) {
		c.waiting--
		done(r)
	}, watch)
	if c.Lose != nil && c.Lose(req) {
		c.Lose = nil
		c.Conn.Server().Drop(c.Conn, true)
	}
}

// Reset forgets what was recorded (requests still waiting stay counted).
func (c *RequestLog) Reset() { c.Sent, c.Waiting, c.Trips = nil, nil, 0 }
