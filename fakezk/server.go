package fakezk

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/zkflow/zkflow/internal/chunk"
	"github.com/zkflow/zkflow/task"
)

// Server is an in-memory ZooKeeper 3.8 server: one znode tree, one zxid
// counter, many sessions. All of its state sits behind one lock; no
// callback is ever called with the lock held.
type Server struct {
	cfg   Config
	clock task.Clock

	mu       sync.Mutex
	tree     *tree
	zxid     int64
	rng      *rand.Rand
	sessions map[int64]*session
	sessIDs  sessionIDs
	sessSeq  int64 // sessions created, for Sessions' creation order
	conns    []*Conn
	connSeq  int    // Conns made, for their trace numbers
	trig     uint64 // triggers so far (remote notifications: one per trigger)
	down     bool
	dataW    map[string][]*watch // exists and getData watches
	childW   map[string][]*watch // getChildren watches
	pdata    map[string][]preg   // persistent registrations in the data list (pwatch.go)
	pchild   map[string][]preg   // and in the child list
	// Lists of dataW and childW whose path had no watch left, for
	// the next path's first watch (register).
	spareLists [][]*watch
	// The rest of the chunk addWatch cuts new watches from.
	spareWatches chunk.Of[watch]
	// The rest of the chunk newNode cuts new nodes from.
	spareNodes chunk.Of[node]
	// The rest of the chunk newResults cuts multis' results from.
	spareResults chunk.Of[task.MultiResult]
	// The rest of the chunk copyNames cuts listings from.
	spareNames chunk.Of[string]
	// The rest of the chunk commitNodes cuts commits' nodes from.
	spareCommits chunk.Of[Node]
	// The nodes journalTx tells of, a buffer it reuses.
	journalRefs []journalRef
	pwatchN     int // live persistent watches, of every session
	trace       tracer
	reap        reaper // the container manager (reap.go)

	// Lagging members (lag.go): the Conns that lag, and the nodes' prior
	// versions while any does.
	lagN       int
	hists      map[string]*pathHist
	histN      int
	histFrom   int64               // the lowest view hist can answer for
	trimAt     int                 // trim the history past this many entries
	keepHist   bool                // KeepHistory
	lagWatched bool                // LagWatchedReads
	staleN     int                 // reads answered stale (StaleReads)
	snaps      chunk.Of[snap]      // the rest of the chunk newSnap cuts snaps from
	spareHist  chunk.Of[histEntry] // the rest of the chunk newHist cuts histories from
	spareHists chunk.Of[pathHist]  // the rest of the chunk pathHistOf cuts paths' histories from

	// A transaction's trigger buffer, reused (takeFires).
	spareFires []fired
	// Its other buffers, reused (takeBufs).
	spareBufs txBufs

	ready   []*Conn  // conns with deliverable items
	cuts    []func() // Link.OnCut hooks of links cut, run by drain (remote.go)
	pumping bool     // automatic mode: a goroutine is delivering
	stepMu  sync.Mutex
	closed  bool
	timers  []task.Timer // server-wide timers (restart), stopped by Close

	kick    chan struct{} // Async: wakes the delivery goroutine
	stop    chan struct{} // Async: closed by Close
	stopped chan struct{} // Async: closed when the goroutine is gone

	// While down, the servers are up but serve no one (LoseQuorum): they
	// close every connection at the handshake. Guarded by mu.
	notServing bool
}

// New returns a server configured by cfg (see Config for defaults). It
// panics if cfg does not validate: configuration is a programmer's choice.
func New(cfg Config) *Server {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	// Session ids depend on the seed and the clock's reading at New; on the
	// default wall clock they are taken at Epoch, so that one seed hands
	// out the same ids on every run.
	idsAt := Epoch
	wall := cfg.Clock == nil && !cfg.Deterministic
	cfg.ensureDefaults()
	if !wall {
		idsAt = cfg.Clock.Now()
	}
	s := &Server{
		cfg:      cfg,
		clock:    cfg.Clock,
		tree:     newTree(),
		rng:      rand.New(rand.NewPCG(cfg.Seed, 0x7a6b666c6f77)),
		sessions: map[int64]*session{},
		dataW:    map[string][]*watch{},
		childW:   map[string][]*watch{},
		pdata:    map[string][]preg{},
		pchild:   map[string][]preg{},
	}
	s.sessIDs = newSessionIDs(cfg.Seed, idsAt)
	s.trace.on = cfg.Trace
	s.startReaper()
	if cfg.Async {
		s.kick = make(chan struct{}, 1)
		s.stop = make(chan struct{})
		s.stopped = make(chan struct{})
		go s.deliverLoop()
	}
	return s
}

// Clock returns the server's clock.
func (s *Server) Clock() task.Clock { return s.clock }

// Zxid returns the last zxid the server assigned.
func (s *Server) Zxid() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.zxid
}

func (s *Server) nowMillis() int64 { return s.clock.Now().UnixMilli() }

// afterFunc arms a clock timer whose f runs under the server lock and then
// lets automatic mode deliver what it produced.
func (s *Server) afterFunc(d time.Duration, f func()) task.Timer {
	return s.clock.AfterFunc(d, func() {
		s.mu.Lock()
		if !s.closed {
			f()
		}
		s.mu.Unlock()
		s.pump()
	})
}

// Connect returns a client connection. Its session is opened by Start. It
// panics if cfg.Root is not a valid root (see ConnConfig): configuration
// is a programmer's choice, as with New.
func (s *Server) Connect(cfg ConnConfig) *Conn {
	root, err := checkRoot(cfg.Root)
	if err != nil {
		panic(err)
	}
	cfg.Root = root
	s.mu.Lock()
	defer s.mu.Unlock()
	s.connSeq++
	c := &Conn{srv: s, num: s.connSeq, cfg: cfg, obs: cfg.Observer.Filled()}
	s.conns = append(s.conns, c)
	return c
}

// ConnConfig describes one client connection.
type ConnConfig struct {
	// Timeout is the session timeout the client asks for; the server
	// negotiates it (see NegotiateTimeout). 0 asks for the minimum.
	Timeout time.Duration
	// Auth are the credentials the connection presents (ZooKeeper's
	// addAuth) on every connect, before any request: after a reconnect
	// the session is authenticated again, and so is the new session that
	// follows an expiry. Scheme "digest" with Auth "user:password" gives
	// the session the id digest:user:base64(sha1(user:password)) (see
	// task.DigestACL); scheme "ip" adds nothing (the session has its ip id
	// already). Any other scheme makes Start fail with an error wrapping
	// task.CodeAuthFailed, as a real server answers it with AuthFailed
	// and closes the connection.
	Auth []task.AuthInfo
	// IP is the client's IPv4 address as the server sees it: the
	// session's id of scheme "ip", which ACL entries ip:a.b.c.d[/bits]
	// match. Empty means DefaultClientIP (127.0.0.1).
	IP string
	// Root is the connection's chroot, the "/app" of ZooKeeper's
	// "host:port/app" connect string: every path the client sends is
	// taken relative to it ("/" is Root itself) and every path it gets
	// back has it stripped. "" or "/" means none; otherwise it must be a
	// valid path (task.ValidatePath: absolute, no trailing slash). The
	// node must exist for creates below it to succeed: neither the Conn
	// nor the server creates it (chroot.go).
	Root string
	// Observer, if not nil, is told of the connection's facts through its
	// OnConn callback (the Conn makes no other; give the executor the same
	// Observer for the rest): each connect attempt after the first
	// session (task.ConnAttempt), each refused at the handshake
	// (task.ConnHandshakeFailed, Err saying why) and each session made
	// usable (task.ConnEstablished, Reconnect when it resumed). Server is
	// "": the fake has one. OnConn runs with the server's lock held, on
	// the goroutine that caused the fact (a fault method, a clock timer):
	// it must not block or call the Server or its Conns.
	Observer *task.Observer
}

// Sessions returns the ids of the live sessions, in creation order.
func (s *Server) Sessions() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	live := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		live = append(live, sess)
	}
	slices.SortFunc(live, func(a, b *session) int { return cmp.Compare(a.seq, b.seq) })
	var ids []int64
	for _, sess := range live {
		ids = append(ids, sess.id)
	}
	return ids
}
