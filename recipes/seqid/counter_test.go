package seqid_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/seqid"
	"github.com/zkflow/zkflow/task"
)

// reads counts the reads a client sends.
type reads struct {
	*fakezk.Conn
	n int
}

func (c *reads) Do(req task.Request, done func(task.Response), watch func(task.Event)) {
	if _, ok := req.(*task.GetDataRequest); ok {
		c.n++
	}
	c.Conn.Do(req, done, watch)
}

// A Counter reads the node once (creating it first here), then takes each ID with one write while
// nobody else writes; after a foreign write it reads again, and its IDs
// stay above every ID handed out.
func TestCounterOneWritePerID(t *testing.T) {
	var rd *reads
	w, err := sim.New(sim.Config{Seed: 1, Clients: 2, Wrap: func(i int, c *fakezk.Conn) task.Conn {
		if i == 0 {
			rd = &reads{Conn: c}
			return rd
		}
		return c
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ct, err := seqid.NewCounter("/ctr")
	if err != nil {
		t.Fatal(err)
	}
	for want := int64(1); want <= 10; want++ {
		if id, err := sim.Run(w, 0, ct.Next()); err != nil || id != want {
			t.Fatalf("id %d, %v; want %d", id, err, want)
		}
	}
	if rd.n != 2 { // the node was missing: read, create, read
		t.Fatalf("%d reads for 10 IDs, want 2", rd.n)
	}
	// Another client takes an ID: the counter's version is stale.
	if id, err := sim.Run(w, 1, seqid.Next("/ctr")); err != nil || id != 11 {
		t.Fatalf("other client: %d, %v", id, err)
	}
	if id, err := sim.Run(w, 0, ct.Next()); err != nil || id != 12 {
		t.Fatalf("after a foreign write: %d, %v; want 12", id, err)
	}
	if rd.n != 3 {
		t.Fatalf("%d reads, want 3 (one more after the foreign write)", rd.n)
	}
	if _, err := seqid.NewCounter("bad"); err == nil {
		t.Fatal("invalid path accepted")
	}
}
