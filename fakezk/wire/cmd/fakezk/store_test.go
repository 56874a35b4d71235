package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/zkflow/zkflow/fakezk"
)

// journaled opens dataDir and returns a server journaling into it, as the
// command does, with a snapshot every `every` commits.
func journaled(t *testing.T, dir string, every int) (*fakezk.Server, *store, recovered) {
	t.Helper()
	st, rec, err := openStore(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	st.every = every
	st.logf = func(string, ...any) {}
	st.fail = func(err error) { t.Errorf("journal: %v", err) }
	if rec.fresh {
		rec.zxid, rec.nodes = fakezk.New(fakezk.Config{}).Snapshot()
	}
	if err := st.seed(rec.zxid, rec.nodes); err != nil {
		t.Fatal(err)
	}
	srv, err := fakezk.Restore(fakezk.Config{Journal: st.journal}, rec.zxid, rec.nodes)
	if err != nil {
		t.Fatal(err)
	}
	return srv, st, rec
}

// The log is replaced by a snapshot every `every` commits, and recovery
// reads the snapshot and the log after it to the tree the server had;
// a crash between writing a snapshot and emptying the log (the log's
// records are in the snapshot) recovers the same tree.
func TestSnapshotRollover(t *testing.T) {
	dir := t.TempDir()
	srv, st, _ := journaled(t, dir, 3)
	for i := 0; i < 8; i++ {
		if err := srv.AdminCreate(fmt.Sprintf("/n%d", i), []byte{byte(i)}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if st.pending != 2 {
		t.Fatalf("%d commits in the log after 8 with a snapshot every 3, want 2", st.pending)
	}
	zxid, nodes := srv.Snapshot()
	srv.Close()
	st.close()
	_, rec, err := openStore(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if rec.zxid != zxid || !reflect.DeepEqual(rec.nodes, nodes) {
		t.Fatalf("recovered zxid %d and\n%+v\nwant %d and\n%+v", rec.zxid, rec.nodes, zxid, nodes)
	}

	// Snapshot at 6 commits, log of the 3 before it plus 2 after: the
	// first 3 are skipped (the snapshot has them).
	srv2, st2, _ := journaled(t, t.TempDir(), 6)
	var stale []byte
	for i := 0; i < 8; i++ {
		if i == 5 {
			stale, _ = os.ReadFile(st2.logPath())
		}
		if err := srv2.AdminCreate(fmt.Sprintf("/n%d", i), nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	zxid2, nodes2 := srv2.Snapshot()
	after, _ := os.ReadFile(st2.logPath())
	srv2.Close()
	st2.close()
	crashed := append(stale, after[len(logMagic):]...)
	if err := os.WriteFile(st2.logPath(), crashed, 0o644); err != nil {
		t.Fatal(err)
	}
	_, rec2, err := openStore(filepath.Dir(st2.dir), "")
	if err != nil {
		t.Fatalf("log holding records of the snapshot: %v", err)
	}
	if rec2.zxid != zxid2 || !reflect.DeepEqual(rec2.nodes, nodes2) || rec2.replayed != 2 {
		t.Fatalf("recovered zxid %d (%d records replayed), want %d (2 replayed)", rec2.zxid, rec2.replayed, zxid2)
	}
}

// A log with no snapshot beside it, or records out of zxid order, is
// damage: errCorrupt.
func TestCorruptStore(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, storeDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, storeDir, "log"), []byte(logMagic), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := openStore(dir, ""); !errors.Is(err, errCorrupt) {
		t.Errorf("log without snapshot: %v, want errCorrupt", err)
	}

	dir2 := t.TempDir()
	srv, st, _ := journaled(t, dir2, 100)
	for i := 0; i < 3; i++ {
		if err := srv.AdminCreate(fmt.Sprintf("/n%d", i), nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	srv.Close()
	st.close()
	log, _ := os.ReadFile(st.logPath())
	offs := recordOffsets(t, log)
	// The second record again after the third: zxid goes back.
	again := append(append([]byte(nil), log...), log[offs[1]:offs[2]]...)
	if err := os.WriteFile(st.logPath(), again, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := openStore(dir2, ""); !errors.Is(err, errCorrupt) {
		t.Errorf("zxid going back in the log: %v, want errCorrupt", err)
	}
}

// A log whose header itself was torn (a crash as it was started again)
// recovers as an empty log with a whole header.
func TestTornLogHeader(t *testing.T) {
	dir := t.TempDir()
	srv, st, _ := journaled(t, dir, 100)
	srv.Close()
	st.close()
	if err := os.WriteFile(st.logPath(), []byte(logMagic[:5]), 0o644); err != nil {
		t.Fatal(err)
	}
	st2, rec, err := openStore(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer st2.close()
	if rec.tornAt != 0 || rec.replayed != 0 {
		t.Fatalf("torn header: tornAt %d, %d replayed; want 0, 0", rec.tornAt, rec.replayed)
	}
	if b, _ := os.ReadFile(st2.logPath()); string(b) != logMagic {
		t.Fatalf("log after recovery %q, want the header alone", b)
	}
}
