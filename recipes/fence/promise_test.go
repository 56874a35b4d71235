package fence_test

// Promises of the package's docs that an adversarial review found broken:
// each test fails on the code before the fix (fencetest passed stores
// that break the fence).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zkflow/zkflow/recipes/fence"
	"github.com/zkflow/zkflow/recipes/fence/fencetest"
)

// etagStore is a Store whose version is a content hash of the value (an
// ETag), the token kept beside it (say, in the object's metadata): a
// write that changes only the token (Read's claim) leaves the version
// as it was. It breaks PROTOCOL.md's "A Store must change a key's version
// at every write and never give a version back".
type etagStore struct {
	mu sync.Mutex
	m  map[string]fence.Entry
}

func etag(e fence.Entry, ok bool) string {
	if !ok {
		return "" // absent
	}
	h := sha256.New()
	if e.Value != nil {
		h.Write([]byte{1})
		h.Write(e.Value)
	} else {
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (s *etagStore) Load(ctx context.Context, key string) (fence.Entry, string, error) {
	if err := ctx.Err(); err != nil {
		return fence.Entry{}, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	return fence.Entry{Value: slices.Clone(e.Value), Token: e.Token}, etag(e, ok), nil
}

func (s *etagStore) CompareAndSwap(ctx context.Context, key string, old string, e fence.Entry) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.m[key]
	if etag(cur, ok) != old {
		return false, nil
	}
	if s.m == nil {
		s.m = map[string]fence.Entry{}
	}
	s.m[key] = fence.Entry{Value: slices.Clone(e.Value), Token: e.Token}
	return true, nil
}

// afterLoad calls hook once, after the first Load.
type afterLoad[V any] struct {
	fence.Store[V]
	hook func()
}

func (h *afterLoad[V]) Load(ctx context.Context, key string) (fence.Entry, V, error) {
	e, v, err := h.Store.Load(ctx, key)
	if f := h.hook; f != nil {
		h.hook = nil
		f()
	}
	return e, v, err
}

const fencetestChild = "FENCE_PROMISE_FENCETEST_CHILD"

// fencetest's promise (package fence: "recipes/fence/fencetest checks a
// Store you write"; fencetest: "checks a fence.Store implementation: the
// store's compare-and-swap contract, and the fence's guarantee run over
// it"). A store whose version does not change when only the token
// changes (etagStore) breaks the guarantee: a claim by Read lands
// between a lower holder's load and compare-and-swap, and the lower
// holder's write is accepted after the claim. fencetest.Run passed it;
// it checks a claim between a load and a compare-and-swap now, and that
// a write of the token alone changes the version.
func TestFencetestRefusesAStoreWhoseVersionIgnoresTheToken(t *testing.T) {
	if os.Getenv(fencetestChild) == "etag" {
		fencetest.Run(t, func(*testing.T) fence.Store[string] { return &etagStore{} })
		return
	}
	ctx := context.Background()

	// 1. The store does break the fence.
	s := &etagStore{}
	if err := fence.Write(ctx, s, "k", 4, []byte("v4")); err != nil {
		t.Fatal(err)
	}
	h := &afterLoad[string]{Store: s, hook: func() {
		if _, err := fence.Read(ctx, s, "k", 9); err != nil { // holder 9 claims k
			t.Errorf("claim by 9: %v", err)
		}
	}}
	err := fence.Write(ctx, h, "k", 5, []byte("late by 5"))
	e, _, _ := s.Load(ctx, "k")
	if err == nil && e.Token == 5 {
		t.Logf("on etagStore, holder 5's write was accepted after holder 9 claimed the key: stored %q token %d", e.Value, e.Token)
	} else {
		t.Fatalf("etagStore did not break the fence (write: %v, stored %+v): the premise of this test is wrong", err, e)
	}

	// 2. fencetest.Run, in a child process, must reject this store.
	cmd := exec.Command(os.Args[0], "-test.run=^TestFencetestRefusesAStoreWhoseVersionIgnoresTheToken$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fencetestChild+"=etag")
	out, runErr := cmd.CombinedOutput()
	if runErr == nil {
		t.Errorf("fencetest.Run passed a store that breaks the fence (its version ignores the token, so a claim by Read does not fail a concurrent lower holder's compare-and-swap):\n%s", out)
	}
}

// foldStore is fence.Memory with keys compared case-insensitively (as
// a SQL table under a case-insensitive collation, MySQL's default, would
// compare them): "K" and "k" share one entry.
type foldStore struct{ m fence.Memory }

func (s *foldStore) Load(ctx context.Context, key string) (fence.Entry, uint64, error) {
	return s.m.Load(ctx, strings.ToLower(key))
}

func (s *foldStore) CompareAndSwap(ctx context.Context, key string, old uint64, e fence.Entry) (bool, error) {
	return s.m.CompareAndSwap(ctx, strings.ToLower(key), old, e)
}

// The same promise of fencetest, with a store that merges keys that
// differ in case: a write to "Config" is refused because token 10 wrote
// "config" ("A write is refused only when a higher token has written the
// key"; "the fence is per key"), and fencetest.Run passed the store; it
// checks keys that differ only in case, spaces or a letter now.
func TestFencetestRefusesAStoreThatFoldsKeyCase(t *testing.T) {
	if os.Getenv(fencetestChild) == "fold" {
		fencetest.Run(t, func(*testing.T) fence.Store[uint64] { return &foldStore{} })
		return
	}
	ctx := context.Background()
	s := &foldStore{}
	if err := fence.Write(ctx, s, "config", 10, []byte("by 10")); err != nil {
		t.Fatal(err)
	}
	if err := fence.Write(ctx, s, "Config", 5, []byte("by 5")); !errors.Is(err, fence.ErrFenced) {
		t.Fatalf("foldStore did not merge keys (write to Config: %v): the premise of this test is wrong", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFencetestRefusesAStoreThatFoldsKeyCase$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fencetestChild+"=fold")
	out, runErr := cmd.CombinedOutput()
	if runErr == nil {
		t.Errorf("fencetest.Run passed a store that merges keys differing in case (token 5's first write to \"Config\" was refused by token 10's write to \"config\"):\n%s", out)
	}
}

// aliasStore is fence.Memory without the copies: CompareAndSwap keeps
// the slice it is given and Load hands out the stored one (as a cache in
// front of a database might).
type aliasStore struct {
	mu sync.Mutex
	m  map[string]aliasEntry
}

type aliasEntry struct {
	e       fence.Entry
	version uint64
}

func (s *aliasStore) Load(ctx context.Context, key string) (fence.Entry, uint64, error) {
	if err := ctx.Err(); err != nil {
		return fence.Entry{}, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	me := s.m[key]
	return me.e, me.version, nil
}

func (s *aliasStore) CompareAndSwap(ctx context.Context, key string, old uint64, e fence.Entry) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[key].version != old {
		return false, nil
	}
	if s.m == nil {
		s.m = map[string]aliasEntry{}
	}
	s.m[key] = aliasEntry{e: e, version: old + 1}
	return true, nil
}

// The same promise of fencetest, with a store that keeps the value
// slices it is given and hands them out (aliasStore). Holder 5 writes
// from a buffer, holder 9 claims the key with Read; holder 5, refused
// from then on, fills its buffer for its next write, and the key's value
// under token 9 becomes holder 5's bytes without any write reaching the
// store ("once a holder has ... claimed it with Read, no holder with a
// lower token writes it again"; Read: "what Read returned stays the
// value until this holder or a newer one writes"). The Store contract
// did not say who owns the slices, and fencetest.Run passed the store;
// the contract says now that a Store copies, and fencetest checks it.
func TestFencetestRefusesAStoreThatKeepsTheCallersSlices(t *testing.T) {
	if os.Getenv(fencetestChild) == "alias" {
		fencetest.Run(t, func(*testing.T) fence.Store[uint64] { return &aliasStore{} })
		return
	}
	ctx := context.Background()
	s := &aliasStore{}
	buf := []byte("by 5")
	if err := fence.Write(ctx, s, "k", 5, buf); err != nil {
		t.Fatal(err)
	}
	read, err := fence.Read(ctx, s, "k", 9)
	if err != nil || string(read) != "by 5" {
		t.Fatalf("claim by 9: %q, %v", read, err)
	}
	copy(buf, "xx 5") // holder 5 reuses its buffer
	if err := fence.Write(ctx, s, "k", 5, buf); !errors.Is(err, fence.ErrFenced) {
		t.Fatalf("holder 5 after the claim: %v; want ErrFenced", err)
	}
	if e, _, _ := s.Load(ctx, "k"); string(e.Value) == "xx 5" && e.Token == 9 {
		t.Logf("on aliasStore, the value under token 9 is holder 5's %q, which reached the store in no write", e.Value)
	} else {
		t.Fatalf("aliasStore kept %+v: the premise of this test is wrong", e)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFencetestRefusesAStoreThatKeepsTheCallersSlices$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fencetestChild+"=alias")
	out, runErr := cmd.CombinedOutput()
	if runErr == nil {
		t.Errorf("fencetest.Run passed a store that keeps the slices it is given and hands out its own (a former holder's buffer became the key's value under a newer token):\n%s", out)
	}
}
