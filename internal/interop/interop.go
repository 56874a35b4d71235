package interop

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/wire"
	"github.com/zkflow/zkflow/internal/netproxy"
	"github.com/zkflow/zkflow/task"
	"github.com/zkflow/zkflow/zkadapter/zkserver"
)

// Server is a standalone ZooKeeper server a scenario runs against.
type Server interface {
	// Addrs is what clients dial (the proxy's address when Proxied).
	Addrs() []string
	// DirectAddr is server i's own address, around the proxy.
	DirectAddr(i int) string
	// Partition silences server i's proxy (Options.Proxied): clients
	// notice only by their own timeouts. Heal lets new connections pass
	// again and resets the silenced ones.
	Partition(i int)
	Heal(i int)
}

// A Maker starts one kind of server for a test and stops it when the test
// ends.
type Maker struct {
	Name  string
	Start func(t testing.TB, opts zkserver.Options) Server
}

// Makers are the two kinds: "real" (zkserver.Standalone, skipped without
// java) and "fakezk" (fakezk/wire in process).
func Makers() []Maker {
	return []Maker{
		{Name: "real", Start: func(t testing.TB, opts zkserver.Options) Server { return real{zkserver.Standalone(t, opts)} }},
		{Name: "fakezk", Start: StartFake},
	}
}

// Run runs scenario once on each of Makers, as subtests named after them.
func Run(t *testing.T, opts zkserver.Options, scenario func(t *testing.T, srv Server)) {
	t.Helper()
	for _, m := range Makers() {
		t.Run(m.Name, func(t *testing.T) { scenario(t, m.Start(t, opts)) })
	}
}

type real struct{ *zkserver.Cluster }

func (r real) DirectAddr(i int) string { return r.Server(i).DirectAddr() }

// Fake is fakezk served on a loopback port.
type Fake struct {
	ZK    *fakezk.Server
	Wire  *wire.Server
	addr  string
	proxy *netproxy.Proxy
	// served is closed when Serve has returned.
	served chan struct{}
}

// StartFake serves a fresh fakezk.Server on the real clock on 127.0.0.1,
// behind a proxy if opts.Proxied. Everything stops when t ends.
func StartFake(t testing.TB, opts zkserver.Options) Server {
	t.Helper()
	f, err := NewFake(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// NewFake is StartFake outside a test: the caller must Close it.
func NewFake(opts zkserver.Options) (*Fake, error) {
	tick := 100 * time.Millisecond
	if opts.MaxSessionTimeout > 20*tick {
		tick = opts.MaxSessionTimeout / 20
	}
	zk := fakezk.New(fakezk.Config{Clock: task.RealClock(), TickTime: tick})
	srv := wire.New(zk, wire.Config{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		zk.Close()
		return nil, fmt.Errorf("interop: %w", err)
	}
	f := &Fake{ZK: zk, Wire: srv, addr: l.Addr().String(), served: make(chan struct{})}
	go func() {
		defer close(f.served)
		srv.Serve(l)
	}()
	if opts.Proxied {
		if f.proxy, err = netproxy.New(f.addr); err != nil {
			f.Close()
			return nil, fmt.Errorf("interop: %w", err)
		}
	}
	return f, nil
}

// Close stops the proxy, the wire server (waiting for its goroutines) and
// the fakezk server.
func (f *Fake) Close() {
	if f.proxy != nil {
		f.proxy.Close()
	}
	f.Wire.Close()
	<-f.served
	f.ZK.Close()
}

// Addrs is the proxy's address when proxied, else the server's.
func (f *Fake) Addrs() []string {
	if f.proxy != nil {
		return []string{f.proxy.Addr()}
	}
	return []string{f.addr}
}

// DirectAddr is the wire server's own address.
func (f *Fake) DirectAddr(i int) string {
	f.check(i, "DirectAddr")
	return f.addr
}

// Partition silences the proxy, as zkserver.Cluster.Partition does.
func (f *Fake) Partition(i int) {
	f.check(i, "Partition")
	f.needProxy("Partition")
	f.proxy.Silence()
}

// Heal opens the proxy and resets the silenced connections, as
// zkserver.Cluster.Heal does.
func (f *Fake) Heal(i int) {
	f.check(i, "Heal")
	f.needProxy("Heal")
	f.proxy.Open()
	f.proxy.ResetSilenced()
}

func (f *Fake) check(i int, op string) {
	if i != 0 {
		panic(fmt.Sprintf("interop: %s(%d) on a standalone fakezk (server 0 only)", op, i))
	}
}

func (f *Fake) needProxy(op string) {
	if f.proxy == nil {
		panic(fmt.Sprintf("interop: %s needs a server started with Options.Proxied", op))
	}
}
