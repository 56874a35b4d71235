package fakezk_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// recorder logs everything a Conn delivers, in order.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(s string)         { r.mu.Lock(); r.log = append(r.log, s); r.mu.Unlock() }
func (r *recorder) events(ev task.Event) { r.add("event " + ev.String()) }
func (r *recorder) done(tag string) func(task.Response) {
	return func(resp task.Response) { r.add(fmt.Sprintf("%s %v", tag, errText(resp.Err))) }
}
func (r *recorder) watch(tag string) func(task.Event) {
	return func(ev task.Event) { r.add(fmt.Sprintf("%s %s %s", tag, ev.Type, ev.State)) }
}
func (r *recorder) get() []string { r.mu.Lock(); defer r.mu.Unlock(); return slices.Clone(r.log) }

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func detServer(seed uint64) (*fakezk.Server, *fakezk.Clock) {
	clk := fakezk.NewClock(time.Time{})
	return fakezk.New(fakezk.Config{Seed: seed, Clock: clk, Deterministic: true, Trace: true}), clk
}

func start(t *testing.T, srv *fakezk.Server, timeout time.Duration) (*fakezk.Conn, *recorder) {
	t.Helper()
	r := &recorder{}
	c := srv.Connect(fakezk.ConnConfig{Timeout: timeout})
	if err := c.Start(r.events); err != nil {
		t.Fatal(err)
	}
	srv.RunUntilIdle()
	return c, r
}

func check(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

func mk(path string) *task.CreateRequest {
	return &task.CreateRequest{Path: path, ACL: task.OpenACL}
}

func TestTimeoutNegotiation(t *testing.T) {
	for _, tc := range []struct{ ask, want time.Duration }{
		{0, 4 * time.Second}, {time.Second, 4 * time.Second}, {10 * time.Second, 10 * time.Second},
		{40 * time.Second, 40 * time.Second}, {time.Hour, 40 * time.Second},
	} {
		if got := fakezk.NegotiateTimeout(tc.ask, 2*time.Second); got != tc.want {
			t.Errorf("ask %s: got %s, want %s", tc.ask, got, tc.want)
		}
	}
}

// As on a real server, a session gets the notifications its own write
// triggered before the write's response.
func TestOwnNotificationBeforeResponse(t *testing.T) {
	srv, _ := detServer(1)
	c, r := start(t, srv, 0)
	c.Do(mk("/a"), r.done("create"), nil)
	c.Do(&task.GetDataRequest{Path: "/a", Watch: true}, r.done("get"), r.watch("watch"))
	c.Do(&task.SetDataRequest{Path: "/a", Version: -1}, r.done("set"), nil)
	c.Do(&task.ExistsRequest{Path: "/a"}, r.done("exists"), nil)
	srv.RunUntilIdle()
	check(t, r.get()[1:], "create ok", "get ok", "watch NodeDataChanged Connected", "set ok", "exists ok")
}

func TestExpiryExactlyAtTimeout(t *testing.T) {
	for _, tc := range []struct {
		cut     time.Duration
		expired bool
	}{{10*time.Second - time.Millisecond, false}, {10 * time.Second, true}, {10*time.Second + time.Millisecond, true}} {
		srv, clk := detServer(1)
		c, r := start(t, srv, 10*time.Second)
		srv.Partition(c, tc.cut, false)
		clk.Advance(tc.cut)
		srv.RunUntilIdle()
		got := slices.Contains(r.get(), "event session Expired")
		if got != tc.expired {
			t.Errorf("cut off %s: expired=%v, want %v\n%s", tc.cut, got, tc.expired, strings.Join(r.get(), "\n"))
		}
	}
}

func TestDropInFlightAndNotSent(t *testing.T) {
	srv, _ := detServer(3)
	c, r := start(t, srv, 0)
	c.Do(mk("/applied"), r.done("create-applied"), nil)
	srv.Drop(c, true)
	c.Do(mk("/lost"), r.done("create-lost"), nil)
	srv.Drop(c, false)
	srv.RunUntilIdle()
	check(t, r.get()[1:],
		"create-applied connection loss: the request may or may not have been applied",
		"event session Suspended", "event session "+connectedText(c),
		"create-lost connection loss: the request may or may not have been applied",
		"event session Suspended", "event session "+connectedText(c))
	if _, ok := srv.NodeStat("/applied"); !ok {
		t.Error("/applied missing")
	}
	if _, ok := srv.NodeStat("/lost"); ok {
		t.Error("/lost present")
	}
	// While cut off, requests are not sent.
	srv.Partition(c, time.Second, false)
	c.Do(mk("/x"), r.done("while-down"), nil)
	srv.RunUntilIdle()
	if l := r.get(); l[len(l)-1] != "while-down "+task.ErrNotSent.Error() {
		t.Fatalf("last %q", l[len(l)-1])
	}
}

func connectedText(c *fakezk.Conn) string {
	return fmt.Sprintf("Connected id=%#x timeout=4s", c.SessionID())
}

func TestRestartKeepsDataAndSessions(t *testing.T) {
	srv, clk := detServer(4)
	c, r := start(t, srv, 4*time.Second)
	id := c.SessionID()
	c.Do(&task.CreateRequest{Path: "/e", ACL: task.OpenACL, Mode: task.Ephemeral}, r.done("create"), nil)
	srv.RunUntilIdle()
	srv.Restart(time.Minute) // longer than the timeout: the countdown pauses while down
	c.Do(mk("/x"), r.done("during"), nil)
	srv.RunUntilIdle()
	clk.Advance(time.Minute)
	srv.RunUntilIdle()
	if c.SessionID() != id {
		t.Fatalf("session changed across restart")
	}
	if _, ok := srv.NodeStat("/e"); !ok {
		t.Fatal("ephemeral lost across restart")
	}
	check(t, r.get()[1:], "create ok", "event session Suspended", "during "+task.ErrNotSent.Error(), "event session "+connectedText(c))
}

func TestDelayHoldsDeliveries(t *testing.T) {
	srv, clk := detServer(6)
	c, r := start(t, srv, 0)
	srv.Delay(c, 2*time.Second)
	c.Do(mk("/a"), r.done("create"), nil)
	srv.RunUntilIdle()
	if len(r.get()) != 1 {
		t.Fatalf("delivered while delayed: %v", r.get())
	}
	if _, ok := srv.NodeStat("/a"); !ok {
		t.Fatal("request not applied while deliveries were delayed")
	}
	clk.Advance(2 * time.Second)
	srv.RunUntilIdle()
	check(t, r.get()[1:], "create ok")
}

func TestCloseCompletesEverything(t *testing.T) {
	srv, _ := detServer(7)
	c, r := start(t, srv, 0)
	c.Do(mk("/a"), r.done("create"), nil)
	srv.RunUntilIdle()
	c.Do(&task.GetDataRequest{Path: "/a", Watch: true}, r.done("get"), r.watch("watch"))
	srv.RunUntilIdle()
	c.Do(&task.ExistsRequest{Path: "/a"}, r.done("pending"), nil) // still in flight
	c.Close()
	c.Close()
	c.Do(&task.ExistsRequest{Path: "/a"}, r.done("after"), nil)
	srv.RunUntilIdle()
	check(t, r.get()[1:], "create ok", "get ok", "pending closed", "watch NotWatching Closed", "event session Closed", "after closed")
}

func TestChildrenOrderIsShuffled(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Seed: 9})
	c := srv.Connect(fakezk.ConnConfig{})
	c.Start(func(task.Event) {})
	for i := range 20 {
		c.Do(mk(fmt.Sprintf("/n%02d", i)), func(task.Response) {}, nil)
	}
	var lists [][]string
	for range 3 {
		c.Do(&task.GetChildrenRequest{Path: "/"}, func(r task.Response) { lists = append(lists, r.Children) }, nil)
	}
	if slices.IsSorted(lists[0]) || slices.Equal(lists[0], lists[1]) && slices.Equal(lists[1], lists[2]) {
		t.Fatalf("children not shuffled: %v", lists)
	}
	c.Close()
}

// In automatic mode, callbacks of all Conns are serialised even when many
// goroutines call Do at once, and every done runs exactly once.
func TestAutomaticConcurrentUse(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Clock: task.RealClock()})
	var inside, calls atomic.Int64
	enter := func() {
		if inside.Add(1) != 1 {
			panic("callbacks ran concurrently")
		}
		inside.Add(-1)
		calls.Add(1)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		c := srv.Connect(fakezk.ConnConfig{})
		c.Start(func(task.Event) {})
		wg.Go(func() {
			for i := range 500 {
				p := fmt.Sprintf("/g%d-%d", g, i%7)
				c.Do(&task.CreateRequest{Path: p, ACL: task.OpenACL, Mode: task.Ephemeral}, func(task.Response) { enter() }, nil)
				c.Do(&task.ExistsRequest{Path: fmt.Sprintf("/g%d-%d", (g+1)%8, i%7), Watch: true}, func(task.Response) { enter() }, func(task.Event) { enter() })
				c.Do(&task.DeleteRequest{Path: p, Version: -1}, func(task.Response) { enter() }, nil)
			}
			c.Close()
		})
	}
	wg.Wait()
	if calls.Load() < 8*500*3 {
		t.Fatalf("%d callbacks, want at least %d", calls.Load(), 8*500*3)
	}
	if err := srv.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	srv.Close()
}

// In Async mode Do returns before done runs: a done that waits for Do to
// return would deadlock if it were called inside Do.
func TestAsyncDeliversAfterDoReturns(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	c := srv.Connect(fakezk.ConnConfig{})
	c.Start(func(task.Event) {})
	returned := make(chan struct{})
	got := make(chan task.Response, 1)
	c.Do(mk("/a"), func(r task.Response) {
		<-returned
		got <- r
	}, nil)
	close(returned)
	if r := <-got; r.Err != nil || r.Path != "/a" {
		t.Fatalf("response %+v", r)
	}
}

func TestTracePrintable(t *testing.T) {
	srv, _ := detServer(8)
	c, r := start(t, srv, 0)
	c.Do(mk("/a"), r.done("create"), nil)
	srv.Drop(c, true)
	srv.RunUntilIdle()
	var b strings.Builder
	srv.WriteTrace(&b)
	for _, want := range []string{"c1 send #1 create /a", "fault drop c1 applied=true", "reply lost", "c1 deliver session Suspended"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("trace lacks %q:\n%s", want, b.String())
		}
	}
}

// Empty data is not null, as on a real server: a node created or set with
// a zero-length slice reads back as one, a node written with nil reads
// back nil (a client encodes them as lengths 0 and -1, and kazoo, for one,
// decodes -1 as None).
func TestEmptyDataIsNotNull(t *testing.T) {
	srv, _ := detServer(7)
	c, _ := start(t, srv, 0)
	do := func(req task.Request) task.Response {
		t.Helper()
		var got task.Response
		c.Do(req, func(r task.Response) { got = r }, nil)
		srv.RunUntilIdle()
		if got.Err != nil {
			t.Fatalf("%T: %v", req, got.Err)
		}
		return got
	}
	nullness := func(path string) string {
		if d := do(&task.GetDataRequest{Path: path}).Data; d == nil {
			return "null"
		} else {
			return fmt.Sprintf("%d bytes", len(d))
		}
	}
	do(&task.CreateRequest{Path: "/empty", Data: []byte{}, ACL: task.OpenACL})
	do(&task.CreateRequest{Path: "/null", ACL: task.OpenACL})
	if a, b := nullness("/empty"), nullness("/null"); a != "0 bytes" || b != "null" {
		t.Fatalf("created empty: %s, created null: %s", a, b)
	}
	do(&task.SetDataRequest{Path: "/empty", Version: -1})
	do(&task.SetDataRequest{Path: "/null", Data: []byte{}, Version: -1})
	if a, b := nullness("/empty"), nullness("/null"); a != "null" || b != "0 bytes" {
		t.Fatalf("set null: %s, set empty: %s", a, b)
	}
}
