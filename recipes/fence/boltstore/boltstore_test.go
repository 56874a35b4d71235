package boltstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/fence"
	"github.com/zkflow/zkflow/recipes/fence/boltstore"
	"github.com/zkflow/zkflow/recipes/fence/fencetest"
	"github.com/zkflow/zkflow/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "fence.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// The Store contract and the fence's guarantee on a real database file:
// versions and absent keys, a stale holder refused, a newer holder's
// write between a load and a compare-and-swap, 8 goroutines writing with
// their own tokens (fencetest).
func TestStore(t *testing.T) {
	fencetest.Run(t, func(t *testing.T) fence.Store[uint64] {
		st, err := boltstore.New(open(t), "fenced")
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

// Entries survive closing and opening the database again, tokens
// included: a former holder is refused by the reopened file.
func TestDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fence.db")
	ctx := context.Background()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := boltstore.New(db, "fenced")
	if err != nil {
		t.Fatal(err)
	}
	if err := fence.Write(ctx, st, "k", 7, []byte("seven")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err = boltstore.New(db, "fenced")
	if err != nil {
		t.Fatal(err)
	}
	if err := fence.Write(ctx, st, "k", 6, []byte("late")); !errors.Is(err, fence.ErrFenced) {
		t.Fatalf("former holder after reopening: %v; want ErrFenced", err)
	}
	if e, _, err := st.Load(ctx, "k"); err != nil || string(e.Value) != "seven" || e.Token != 7 {
		t.Fatalf("after reopening: %+v, %v", e, err)
	}
}

// Bad input: a nil database, an empty bucket name, an empty key, an
// entry another program wrote in the bucket.
func TestBadInput(t *testing.T) {
	if _, err := boltstore.New(nil, "b"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("nil db: %v", err)
	}
	db := open(t)
	if _, err := boltstore.New(db, ""); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("empty bucket: %v", err)
	}
	st, err := boltstore.New(db, "b")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := fence.Write(ctx, st, "", 1, []byte("x")); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("empty key: %v", err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte("foreign"), []byte("short")) }); err != nil {
		t.Fatal(err)
	}
	err = fence.Write(ctx, st, "foreign", 1, []byte("x"))
	var oe *fence.OpError
	if !errors.Is(err, boltstore.ErrCorrupt) || !errors.As(err, &oe) || oe.Op != "load" {
		t.Fatalf("foreign entry: %v; want an *OpError of load wrapping ErrCorrupt", err)
	}
}

// A nil ctx is bad input: Load and CompareAndSwap refuse it with an
// error matching executor.ErrNilContext (they panicked), writing
// nothing.
func TestNilContextIsRefused(t *testing.T) {
	st, err := boltstore.New(open(t), "b")
	if err != nil {
		t.Fatal(err)
	}
	var nilCtx context.Context
	for name, call := range map[string]func() error{
		"Load":           func() error { _, _, err := st.Load(nilCtx, "k"); return err },
		"CompareAndSwap": func() error { _, err := st.CompareAndSwap(nilCtx, "k", 0, fence.Entry{Token: 1}); return err },
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s with a nil ctx panicked: %v", name, p)
				}
			}()
			if err := call(); !errors.Is(err, executor.ErrNilContext) {
				t.Errorf("%s with a nil ctx: %v; want executor.ErrNilContext", name, err)
			}
		}()
	}
	if e, v, err := st.Load(context.Background(), "k"); err != nil || v != 0 || e.Token != 0 {
		t.Errorf("after the refused calls: %+v, version %d, %v; want no entry", e, v, err)
	}
}

// A nil *Store passed as a fence.Store (a non-nil interface) fails with
// task.ErrInvalidArgument instead of panicking.
func TestTypedNilStoreIsRefused(t *testing.T) {
	var s *boltstore.Store
	ctx := context.Background()
	if _, _, err := s.Load(ctx, "k"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Load on a nil *Store: %v; want task.ErrInvalidArgument", err)
	}
	if _, err := s.CompareAndSwap(ctx, "k", 0, fence.Entry{Token: 1}); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("CompareAndSwap on a nil *Store: %v; want task.ErrInvalidArgument", err)
	}
	if err := fence.Write[uint64](ctx, s, "k", 1, []byte("v")); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("fence.Write to a nil *Store: %v; want task.ErrInvalidArgument", err)
	}
}

// The package doc: "commits it durably (fsync) before it returns, so ...
// a write that returned true is on disk". A database opened with
// bolt.Options{NoSync: true} (or whose DB.NoSync is set later) commits
// without the fsync: a write that returned true could be lost in a crash
// of the machine, taking the key's newest token back, so that a former
// holder's write was accepted after the newer holder's. New took such a
// database and CompareAndSwap wrote to it; both refuse it now, writing
// nothing.
func TestNoSyncIsRefused(t *testing.T) {
	ctx := context.Background()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "nosync.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := boltstore.New(db, "fenced"); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("New on a database opened with NoSync: %v; want task.ErrInvalidArgument", err)
	}

	db = open(t)
	st, err := boltstore.New(db, "fenced")
	if err != nil {
		t.Fatal(err)
	}
	db.NoSync = true
	if err := fence.Write(ctx, st, "k", 3, []byte("v")); !errors.Is(err, task.ErrInvalidArgument) {
		t.Errorf("Write while DB.NoSync is set: %v; want task.ErrInvalidArgument", err)
	}
	db.NoSync = false
	if e, v, err := st.Load(ctx, "k"); err != nil || e.Token != 0 || e.Value != nil || v != 0 {
		t.Errorf("after the refused write: %+v version %d, %v; want no entry", e, v, err)
	}
	if err := fence.Write(ctx, st, "k", 3, []byte("v")); err != nil {
		t.Errorf("Write once NoSync is off: %v", err)
	}
}

// A zero *Store (&boltstore.Store{}, not made by New) passed as a
// fence.Store fails with task.ErrInvalidArgument, as a nil one does; its
// Load and CompareAndSwap dereferenced its nil database and panicked.
func TestZeroStoreIsRefused(t *testing.T) {
	s := &boltstore.Store{}
	ctx := context.Background()
	try := func(name string, f func() error) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s on a zero *Store: panic %v; want task.ErrInvalidArgument", name, r)
			}
		}()
		if err := f(); !errors.Is(err, task.ErrInvalidArgument) {
			t.Errorf("%s on a zero *Store: %v; want task.ErrInvalidArgument", name, err)
		}
	}
	try("Load", func() error { _, _, err := s.Load(ctx, "k"); return err })
	try("CompareAndSwap", func() error { _, err := s.CompareAndSwap(ctx, "k", 0, fence.Entry{Token: 1}); return err })
	try("fence.Write", func() error { return fence.Write(ctx, s, "k", 1, []byte("v")) })
}

// A database opened ReadOnly whose bucket exists gives a Store that
// loads (a process inspecting the fenced entries); its CompareAndSwap
// fails with bbolt's read-only error and writes nothing. Without the
// bucket, New fails: nothing could ever be loaded.
func TestReadOnlyDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fence.db")
	ctx := context.Background()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := boltstore.New(db, "fenced")
	if err != nil {
		t.Fatal(err)
	}
	if err := fence.Write(ctx, st, "k", 7, []byte("seven")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	st, err = boltstore.New(ro, "fenced")
	if err != nil {
		t.Fatalf("New on a read-only database with its bucket: %v", err)
	}
	e, v, err := st.Load(ctx, "k")
	if err != nil || e.Token != 7 || string(e.Value) != "seven" || v != 1 {
		t.Fatalf("Load = %+v, %d, %v; want token 7, seven, version 1", e, v, err)
	}
	ok, err := st.CompareAndSwap(ctx, "k", v, fence.Entry{Token: 8, Value: []byte("eight")})
	if ok || !errors.Is(err, bolt.ErrDatabaseReadOnly) {
		t.Fatalf("CompareAndSwap on a read-only database = %v, %v; want false and bolt.ErrDatabaseReadOnly", ok, err)
	}
	if e, _, err := st.Load(ctx, "k"); err != nil || e.Token != 7 {
		t.Fatalf("after the refused write: %+v, %v", e, err)
	}
	if _, err := boltstore.New(ro, "other"); !errors.Is(err, bolt.ErrBucketNotFound) {
		t.Fatalf("New on a read-only database without the bucket: %v, want bolt.ErrBucketNotFound", err)
	}
}
