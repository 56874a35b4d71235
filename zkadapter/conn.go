package zkadapter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/go-zookeeper/zk"
	"github.com/zkflow/zkflow/task"
)

// Conn is a task.Conn over one go-zookeeper client: one session at a time,
// one serialized stream of callbacks. Create it with New or Dial.
type Conn struct {
	cfg Config
	log *slog.Logger
	obs *task.Observer // nil, or Config.Observer with every field set

	startOnce sync.Once
	startErr  error
	dialCtx   context.Context // canceled by Close: ends dials in progress
	cancel    context.CancelFunc
	zkEvents  <-chan zk.Event // go-zookeeper's own channel, drained only to see it closed

	wg sync.WaitGroup // the sender goroutine

	mu        sync.Mutex
	zc        *zk.Conn
	sendCh    chan unsafe.Pointer // go-zookeeper's send queue (its length is read, never used)
	spill     spill               // calls waiting for the sender goroutine
	sending   bool                // the sender is handing a call or a prelude to go-zookeeper
	preluded  uint64              // the connection whose prelude has been queued
	head      *call               // the pending calls, in Do order
	tail      *call
	events    func(task.Event)
	early     []task.Event // session events before Start
	began     bool         // Start was called
	closing   bool
	closed    chan struct{} // closed when Close has finished
	state     task.State
	sessionID int64
	followed  int64 // the session the executor has taken as current (Follow)
	timeout   time.Duration
	gen       uint64 // session generation: bumped on every expiry
	watches   map[watchKey][]*watchEntry
	pwatches  []*pwatchEntry
	first     chan struct{} // closed at the first session
	hs        handshake     // the last connect response seen on the wire
	lastErr   error         // the last dial or handshake failure, for Connect's error
	notZK     error         // the last answer that was not a connect response (ErrNotZooKeeper)
	wire      *wireConn     // the current connection
	wireSince time.Time     // when it was opened
	wireEnded bool          // its handshake is over (answered or failed)
	live      uint64        // the number of the connection the session is usable on
	lastZxid  int64         // the last zxid of a reply on the current session
	waived    bool          // present lastZxidSeen 0 (handshakeFailed)
	syncFirst bool          // the next prelude starts with a sync
	authErr   error         // the server refused a credential: the Conn closed itself

	wireNo atomic.Uint64 // numbers connections: the last one dialed
	heard  atomic.Int64  // unix nanoseconds of the last bytes read on a session
}

var _ task.Conn = (*Conn)(nil)

// New validates cfg and returns a Conn that has not touched the network
// yet: Connect or Start opens it. It fails with ErrInvalidConfig for a bad
// cfg and with ErrUnsupportedZK when the go-zookeeper linked into the
// binary is not a version the adapter was verified with.
func New(cfg Config) (*Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// The Conn reaches go-zookeeper's unexported request path (wire.go):
	// refuse any version whose layouts it was not verified with.
	if err := verifyLinkedZK(); err != nil {
		return nil, err
	}
	c := &Conn{
		cfg:     cfg,
		log:     cfg.Logger,
		obs:     cfg.Observer.Filled(),
		closed:  make(chan struct{}),
		watches: make(map[watchKey][]*watchEntry),
		spill:   newSpill(),
		first:   make(chan struct{}),
		state:   task.StateConnecting,
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.dialCtx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Dial is New followed by Connect: it returns once a session is
// established, or closes the Conn and returns an error wrapping
// ErrNoSession, ctx's error and the last dial or handshake failure (a
// *net.DNSError, *net.OpError, ErrNotZooKeeper, a TLS error, ...) when
// ctx ends first (or Config.DialTimeout passes, when ctx has no
// deadline), within about a second of that whatever the servers do: a listener
// that accepts and says nothing, something that is not ZooKeeper, a
// connection closed at once, a closed port and a name that does not
// resolve all end the same way. An invalid Config fails at once with
// ErrInvalidConfig. With Config.Root, Dial then asks the server whether
// the root node exists, within the same bound: when it does not, Dial
// closes the Conn and fails with an error that names the root and wraps
// task.ErrNoNode (ZooKeeper's chroot is a node the client never
// creates; without it every request would fail so). Start must still be
// called to receive events; the events that happened before it (the
// first StateConnected) are kept.
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.Connect(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.checkRoot(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// checkRoot fails with task.ErrNoNode when the server says the Conn's
// root node does not exist. Any other outcome (the node there, a
// connection lost before the answer, ctx ended) leaves the Conn to its
// user: the check is there to name a missing root at once, not to add a
// way for Dial to fail.
func (c *Conn) checkRoot(ctx context.Context) error {
	if c.cfg.Root == "" {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.DialTimeout)
		defer cancel()
	}
	answer := make(chan error, 1)
	c.Do(&task.ExistsRequest{Path: "/"}, func(r task.Response) { answer <- r.Err }, nil)
	select {
	case err := <-answer:
		if errors.Is(err, task.ErrNoNode) {
			return fmt.Errorf("zkadapter: root %s does not exist on %v (create it first: the client does not): %w", c.cfg.Root, c.cfg.Servers, err)
		}
	case <-ctx.Done():
	}
	return nil
}

// Connect opens the connection if it is not open and waits until the
// first session is established or ctx ends; when ctx has no deadline,
// Config.DialTimeout bounds the wait. It does not close the Conn when it
// gives up: go-zookeeper keeps trying in the background.
func (c *Conn) Connect(ctx context.Context) error {
	if err := c.open(); err != nil {
		return err
	}
	bound := ""
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.DialTimeout)
		defer cancel()
		bound = fmt.Sprintf(" (Config.DialTimeout %s: the context had no deadline)", c.cfg.DialTimeout)
	}
	select {
	case <-c.first:
		return nil
	case <-c.closed:
		c.mu.Lock()
		aerr := c.authErr
		c.mu.Unlock()
		if aerr != nil {
			return fmt.Errorf("%w with %v: %w", ErrNoSession, c.cfg.Servers, aerr)
		}
		return task.ErrClosed
	case <-ctx.Done():
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			bound = "" // the caller canceled: DialTimeout did not end it
		}
		c.mu.Lock()
		last, notZK := c.lastErr, c.notZK
		if w := c.wire; w != nil && !c.wireEnded {
			// An attempt still in progress says more than older ones.
			last = fmt.Errorf("handshake with %s: no connect response after %s", w.addr, time.Since(c.wireSince).Round(time.Millisecond))
		}
		c.mu.Unlock()
		if last == nil {
			return fmt.Errorf("%w with %v: %w%s (no attempt ended yet)", ErrNoSession, c.cfg.Servers, ctx.Err(), bound)
		}
		if notZK != nil && notZK != last {
			// A server that is not ZooKeeper is worth naming even when
			// another attempt failed later.
			return fmt.Errorf("%w with %v: %w%s (last error: %w; earlier: %w)", ErrNoSession, c.cfg.Servers, ctx.Err(), bound, last, notZK)
		}
		return fmt.Errorf("%w with %v: %w%s (last error: %w)", ErrNoSession, c.cfg.Servers, ctx.Err(), bound, last)
	}
}

// zkEncodeBuffer is the size of the encode buffer go-zookeeper's Connect
// allocates (its bufferSize).
const zkEncodeBuffer = 1536 * 1024

// open starts the go-zookeeper client once.
func (c *Conn) open() error {
	c.startOnce.Do(func() {
		c.mu.Lock()
		closing := c.closing
		c.mu.Unlock()
		if closing {
			c.startErr = task.ErrClosed
			return
		}
		// go-zookeeper encodes each request into one buffer, 1.5 MiB
		// unless asked otherwise: room for the data limit plus paths and
		// ACLs. What does not fit fails with ErrDataTooLarge, unsent. The
		// option replaces the buffer Connect has allocated, so it is
		// passed only for a larger one (TestOpenAllocatesOneEncodeBuffer).
		// Replies are read without a limit (go-zookeeper's default): a
		// limit would turn a large children list into a connection that
		// fails forever.
		encodeBuffer := func(*zk.Conn) {} // Connect's own
		if size := c.cfg.MaxDataSize + 512*1024; size > zkEncodeBuffer {
			encodeBuffer = zk.WithMaxConnBufferSize(size)
		}
		zc, ev, err := zk.Connect(c.cfg.Servers, c.cfg.SessionTimeout,
			zk.WithDialer(c.dial),
			zk.WithHostProvider(&hostList{}),
			zk.WithLogger(zkLogger{c}),
			zk.WithLogInfo(true),
			zk.WithEventCallback(c.onZKEvent),
			encodeBuffer,
		)
		if err != nil {
			c.startErr = fmt.Errorf("zkadapter: %w", err)
			return
		}
		c.mu.Lock()
		c.zc, c.zkEvents, c.sendCh = zc, ev, zkSendQueue(zc)
		c.mu.Unlock()
		c.wg.Add(1)
		go c.sender(zc)
	})
	return c.startErr
}

// Start implements task.Conn: it opens the connection if Connect did not,
// and starts delivering events to events, first those that happened
// before it (such as the first StateConnected), in order.
func (c *Conn) Start(events func(task.Event)) error {
	if events == nil {
		return fmt.Errorf("zkadapter: Start: %w: nil events function", task.ErrInvalidArgument)
	}
	c.mu.Lock()
	if c.began {
		c.mu.Unlock()
		return errors.New("zkadapter: Start called twice")
	}
	if c.closing {
		c.mu.Unlock()
		return task.ErrClosed
	}
	c.began = true
	c.events = events
	for _, ev := range c.early {
		events(ev)
	}
	c.early = nil
	c.mu.Unlock()
	return c.open()
}

// emit reports a session event, or keeps it for Start. c.mu must be held.
func (c *Conn) emit(ev task.Event) {
	if c.events == nil {
		c.early = append(c.early, ev)
		return
	}
	c.events(ev)
}

// SessionID returns the current session's id (0 before the first one).
func (c *Conn) SessionID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// Close implements task.Conn: it closes the session (its ephemerals go),
// completes every pending request with task.ErrClosed and every watch with
// EventNotWatching (State Closed), reports StateClosed, and returns once
// every goroutine of the Conn and of its go-zookeeper client has returned
// and every callback has been made. With a usable session Close asks the server
// to close it and waits up to a second for the answer; without one (never
// connected, suspended, a server that stopped answering) it closes the
// connection at once. Either way it returns within about a second. Safe
// to call more than once and from any goroutine, but not from a callback
// of the Conn (a callback must not call back into the Conn).
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		<-c.closed
		return nil
	}
	c.closing = true
	live := c.state == task.StateConnected
	for c.head != nil {
		c.finish(c.head, task.Response{Err: task.ErrClosed})
	}
	c.endWatches(task.StateClosed)
	c.state = task.StateClosed
	c.mu.Unlock()

	// No client after Close; and if open is running, wait for it.
	c.startOnce.Do(func() { c.startErr = task.ErrClosed })
	c.mu.Lock()
	zc, ev := c.zc, c.zkEvents
	c.mu.Unlock()
	c.cancel()
	if zc != nil {
		c.closeZK(zc, ev, live)
	}
	c.wg.Wait()

	c.mu.Lock()
	c.emit(task.Event{Type: task.EventNone, State: task.StateClosed})
	c.mu.Unlock()
	close(c.closed)
	return nil
}

// closeZK stops go-zookeeper's client. zk.Conn.Close queues a close
// request and waits up to a second for its answer, which only a session
// in use gives: with a usable session it runs first and then the
// connection is closed under go-zookeeper's loop (a silent server would
// keep its receive loop waiting for two-thirds of the session timeout).
// Without one the connection is closed first, which ends a handshake in
// progress, and the close request, which no send loop will take, is
// answered by flushing go-zookeeper's unsent queue once its loop has
// returned (also when a send loop stuck on a full socket kept the close
// request from being queued).
func (c *Conn) closeZK(zc *zk.Conn, ev <-chan zk.Event, live bool) {
	zdone := make(chan struct{})
	go func() {
		defer close(zdone)
		zc.Close()
	}()
	if !live {
		c.closeWire()
	}
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		for range ev { // go-zookeeper closes it when its loop goroutine returns
		}
	}()
	if live {
		t := time.NewTimer(time.Second)
		select {
		case <-zdone:
		case <-t.C: // the close request could not even be queued
		}
		t.Stop()
		c.closeWire()
	}
	<-loopDone
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		zkFlushUnsent(zc, zk.ErrClosing)
		select {
		case <-zdone:
			return
		case <-tick.C:
		}
	}
}
