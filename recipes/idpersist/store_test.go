package idpersist_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/zkflow/zkflow/recipes/idpersist"
)

func newFileStore(t *testing.T) *idpersist.FileStore {
	t.Helper()
	fs, err := idpersist.NewFileStore(filepath.Join(t.TempDir(), "mark"))
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestFileStoreRoundTrip(t *testing.T) {
	fs := newFileStore(t)
	if v, err := fs.Load(); err != nil || v != 0 {
		t.Fatalf("missing file: %d, %v; want 0, nil", v, err)
	}
	for _, v := range []int64{0, 1, 1000, 1<<63 - 1} {
		if err := fs.Store(v); err != nil {
			t.Fatal(err)
		}
		if got, err := fs.Load(); err != nil || got != v {
			t.Fatalf("load after store %d: %d, %v", v, got, err)
		}
	}
}

func TestFileStoreAtomicReplace(t *testing.T) {
	fs := newFileStore(t)
	for v := range int64(20) {
		if err := fs.Store(v * 7); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := os.ReadDir(filepath.Dir(fs.Path()))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 2 || ents[0].Name() != "mark" || ents[1].Name() != "mark.lock" {
		t.Fatalf("directory holds %v, want only the mark and its lock file (no temp files left)", ents)
	}
	b, _ := os.ReadFile(fs.Path())
	if string(b) != "133\n" {
		t.Fatalf("file holds %q", b)
	}
	// A store that fails (negative) leaves the old mark.
	if err := fs.Store(-1); !errors.Is(err, idpersist.ErrNegative) {
		t.Fatalf("store -1: %v, want ErrNegative", err)
	}
	if v, _ := fs.Load(); v != 133 {
		t.Fatalf("mark %d after a failed store, want 133", v)
	}
}

func TestFileStoreCorrupt(t *testing.T) {
	for _, data := range []string{"", "12", "abc\n", "-5\n", "1 2\n", "99999999999999999999\n", "\x00\x00\x00\x00\x00\x00\x00\x01"} {
		fs := newFileStore(t)
		if err := os.WriteFile(fs.Path(), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if v, err := fs.Load(); !errors.Is(err, idpersist.ErrCorrupt) {
			t.Errorf("load of %q: %d, %v; want ErrCorrupt", data, v, err)
		}
	}
}

func TestFileStoreBadPath(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"", dir, dir + "/", filepath.Join(dir, "no", "such", "mark")} {
		if _, err := idpersist.NewFileStore(p); !errors.Is(err, idpersist.ErrBadPath) {
			t.Errorf("NewFileStore(%q): %v, want ErrBadPath", p, err)
		}
	}
}

// The mark never goes down: a Store of a lower value (a deposed leader's,
// late) leaves it, through another FileStore of the file too.
func TestFileStoreNeverLowers(t *testing.T) {
	a := newFileStore(t)
	b, err := idpersist.NewFileStore(a.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Store(120); err != nil {
		t.Fatal(err)
	}
	if err := a.Store(110); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Load(); err != nil || v != 120 {
		t.Fatalf("mark %d, %v after stores of 120 then 110; want 120", v, err)
	}
}

// Stores racing through FileStores of one file (as the replicas of a
// service do) leave the greatest value: each reads the mark and writes
// under the file's lock.
func TestFileStoreConcurrentStores(t *testing.T) {
	first := newFileStore(t)
	var wg sync.WaitGroup
	const n, each = 8, 20
	for g := range n {
		fs, err := idpersist.NewFileStore(first.Path())
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Goroutine g stores g, g+n, ... downward from its
				// highest: every store but the first is below a mark
				// some goroutine may have stored already.
				if err := fs.Store(int64((each-1-i)*n + g)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if v, err := first.Load(); err != nil || v != (each-1)*n+n-1 {
		t.Fatalf("mark %d, %v after racing stores; want the greatest, %d", v, err, (each-1)*n+n-1)
	}
}

// A mark that cannot be read is not written over: Store fails with
// ErrCorrupt and leaves the file for an operator.
func TestFileStoreKeepsACorruptMark(t *testing.T) {
	fs := newFileStore(t)
	if err := os.WriteFile(fs.Path(), []byte("12"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fs.Store(50); !errors.Is(err, idpersist.ErrCorrupt) {
		t.Fatalf("store over a corrupt mark: %v; want ErrCorrupt", err)
	}
	if b, _ := os.ReadFile(fs.Path()); string(b) != "12" {
		t.Fatalf("file holds %q", b)
	}
}
