package queue_test

import (
	"context"
	"math"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
)

// doc.go: "Put: ErrDataTooLarge for data the queue's larger requests with
// the item could not carry" and size.go: "at most once, a put-back under
// a name above the counter's when the counter has run out ... PutPriority
// refuses such data first". checkSize measured, at most once, a plain
// create under the worst name; putBackAbove sends a multi (a check of
// DIR.epoch, then that create), larger by the multi's headers and the
// check op. The largest item Put accepts, deleted by a take canceled in
// flight and put back while the counter has run out with another item
// queued, was refused for its size: lost (reported as a PutBackError).
func TestLargestPutIsPutBackAboveARunOutCounter(t *testing.T) {
	srv := fakezk.New(fakezk.Config{Async: true})
	defer srv.Close()
	hc := &armConn{Conn: srv.Connect(fakezk.ConnConfig{})}
	a, _, reports := reportingClient(t, srv, hc)
	b := runClient(t, srv, srv.Connect(fakezk.ConnConfig{}))
	bg := context.Background()
	n := largestPut(t, srv, b)
	t.Logf("largest put at most once: %d bytes", n)
	big := make([]byte, n)
	big[0] = 'X'
	if _, err := b.Put(bg, big); err != nil {
		t.Fatal(err)
	}
	canceledInFlight(t, a, hc)
	heldPut := hc.arm(isItemCreate)
	hc.release() // the delete of the big item: applied
	<-heldPut    // the put-back's create
	if _, err := b.Put(bg, []byte("y")); err != nil {
		t.Fatal(err)
	}
	st, _ := srv.NodeStat("/q")
	if err := srv.SetCounters("/q", st.Version, math.MaxInt32); err != nil {
		t.Fatal(err)
	}
	hc.release()
	if err := a.Settle(bg); err != nil {
		t.Fatal(err)
	}
	names, _ := srv.Children("/q")
	for _, nm := range names {
		if d, _, ok := srv.NodeData("/q/" + nm); ok && len(d) == n {
			return
		}
	}
	t.Fatalf("the item of %d bytes (accepted by Put), deleted by a take canceled in flight, is not back in the queue (it holds %v; reports: %v)", n, names, reports())
}
