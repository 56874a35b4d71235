// Package fencetest checks a fence.Store implementation: the store's
// compare-and-swap contract, and the fence's guarantee run over it (a
// stale holder refused, concurrent holders' writes in token order, no
// update lost). Call Run from a test of the implementation with a
// function that opens an empty store.
package fencetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/fence"
	"github.com/zkflow/zkflow/task"
)

// Run runs every check on stores that open returns (a new, empty one for
// each check).
func Run[V any](t *testing.T, open func(t *testing.T) fence.Store[V]) {
	t.Run("CompareAndSwap", func(t *testing.T) { testCAS(t, open(t)) })
	t.Run("Semantics", func(t *testing.T) { testSemantics(t, open(t)) })
	t.Run("NewerHolderBetweenLoadAndCAS", func(t *testing.T) { testInterleaved(t, open(t)) })
	t.Run("ConcurrentHolders", func(t *testing.T) { testConcurrent(t, open(t)) })
}

// testCAS checks the Store contract itself: absent keys, versions,
// a lost compare-and-swap, nil and empty values kept apart.
func testCAS[V any](t *testing.T, s fence.Store[V]) {
	ctx := context.Background()
	e, v0, err := s.Load(ctx, "k")
	if err != nil || e.Token != 0 || e.Value != nil {
		t.Fatalf("load of an absent key: %+v, %v; want Entry{} and no error", e, err)
	}
	if ok, err := s.CompareAndSwap(ctx, "k", v0, fence.Entry{Value: []byte{}, Token: 3}); !ok || err != nil {
		t.Fatalf("compare-and-swap on the absent version: %v, %v; want true", ok, err)
	}
	if ok, err := s.CompareAndSwap(ctx, "k", v0, fence.Entry{Value: []byte("x"), Token: 4}); ok || err != nil {
		t.Fatalf("second compare-and-swap on the absent version: %v, %v; want false (the key exists now)", ok, err)
	}
	e, v1, err := s.Load(ctx, "k")
	if err != nil || e.Token != 3 || e.Value == nil || len(e.Value) != 0 {
		t.Fatalf("load: %+v (nil value %v), %v; want an empty, non-nil value with token 3", e, e.Value == nil, err)
	}
	if ok, err := s.CompareAndSwap(ctx, "k", v1, fence.Entry{Value: nil, Token: 5}); !ok || err != nil {
		t.Fatalf("compare-and-swap on the loaded version: %v, %v; want true", ok, err)
	}
	if ok, err := s.CompareAndSwap(ctx, "k", v1, fence.Entry{Value: []byte("y"), Token: 6}); ok || err != nil {
		t.Fatalf("compare-and-swap on a stale version: %v, %v; want false", ok, err)
	}
	e, _, err = s.Load(ctx, "k")
	if err != nil || e.Token != 5 || e.Value != nil {
		t.Fatalf("load: %+v, %v; want no value (nil) with token 5", e, err)
	}
	if e, _, err := s.Load(ctx, "other"); err != nil || e.Token != 0 {
		t.Fatalf("another key: %+v, %v", e, err)
	}
	// A write that changes only the token (a holder's claim, a delete of
	// an absent value) is a write: the version read before it is stale.
	_, v2, err := s.Load(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.CompareAndSwap(ctx, "k", v2, fence.Entry{Value: nil, Token: 7}); !ok || err != nil {
		t.Fatalf("compare-and-swap of the token alone: %v, %v; want true", ok, err)
	}
	if ok, err := s.CompareAndSwap(ctx, "k", v2, fence.Entry{Value: []byte("z"), Token: 6}); ok || err != nil {
		t.Fatalf("compare-and-swap on the version before a write of the token alone: %v, %v; want false (the version must change at every write)", ok, err)
	}
	// The slices are the caller's: the value given to CompareAndSwap and
	// the one Load returned may be changed by their caller afterwards,
	// and the stored value does not change with them.
	buf := []byte("mine")
	_, v3, err := s.Load(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.CompareAndSwap(ctx, "k", v3, fence.Entry{Value: buf, Token: 8}); !ok || err != nil {
		t.Fatalf("compare-and-swap: %v, %v; want true", ok, err)
	}
	copy(buf, "XXXX")
	e, _, err = s.Load(ctx, "k")
	if err != nil || string(e.Value) != "mine" {
		t.Fatalf("after the caller changed the slice it wrote: %q, %v; want \"mine\" (a Store keeps a copy of the value it is given)", e.Value, err)
	}
	copy(e.Value, "YYYY")
	if e, _, err := s.Load(ctx, "k"); err != nil || string(e.Value) != "mine" {
		t.Fatalf("after the caller changed the value Load returned: %q, %v; want \"mine\" (Load returns a copy)", e.Value, err)
	}
	// Keys are compared exactly: keys that differ only in case, in a
	// trailing space, as a prefix, or in a non-ASCII letter are
	// different entries.
	keys := []string{"key", "Key", "KEY", "key ", "ke", "keyy", "kéy"}
	for i, key := range keys {
		_, v, err := s.Load(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := s.CompareAndSwap(ctx, key, v, fence.Entry{Value: []byte(key), Token: int64(10 + i)}); !ok || err != nil {
			t.Fatalf("first write of key %q: %v, %v; want true (no other key is it)", key, ok, err)
		}
	}
	for i, key := range keys {
		if e, _, err := s.Load(ctx, key); err != nil || string(e.Value) != key || e.Token != int64(10+i) {
			t.Fatalf("key %q holds %+v, %v; want its own write (keys are compared exactly)", key, e, err)
		}
	}
}

// testSemantics walks the fence's rules one call at a time.
func testSemantics[V any](t *testing.T, s fence.Store[V]) {
	ctx := context.Background()
	load := func(key string) fence.Entry {
		t.Helper()
		e, _, err := s.Load(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	fenced := func(err error, token, stored int64) {
		t.Helper()
		var fe *fence.FencedError
		if !errors.Is(err, fence.ErrFenced) || !errors.As(err, &fe) || fe.Token != token || fe.Stored != stored {
			t.Fatalf("got %v; want a *FencedError of token %d over %d", err, token, stored)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fence.Write(ctx, s, "a", 5, []byte("h5")))
	must(fence.Write(ctx, s, "a", 5, []byte("h5 again"))) // the same holder writes again
	must(fence.Write(ctx, s, "a", 7, []byte("h7")))       // a newer holder
	fenced(fence.Write(ctx, s, "a", 5, []byte("late")), 5, 7)
	if e := load("a"); string(e.Value) != "h7" || e.Token != 7 {
		t.Fatalf("after a refused write: %+v; want h7 with token 7", e)
	}
	_, err := fence.Update(ctx, s, "a", 6, func([]byte) ([]byte, error) { t.Fatal("update function called for a fenced holder"); return nil, nil })
	fenced(err, 6, 7)
	_, err = fence.Read(ctx, s, "a", 6)
	fenced(err, 6, 7)

	// Read claims: after it, a lower token's write is refused even
	// though the reader wrote nothing.
	if v, err := fence.Read(ctx, s, "a", 9); err != nil || string(v) != "h7" {
		t.Fatalf("read: %q, %v", v, err)
	}
	if e := load("a"); string(e.Value) != "h7" || e.Token != 9 {
		t.Fatalf("after a claiming read: %+v; want h7 with token 9", e)
	}
	fenced(fence.Write(ctx, s, "a", 8, []byte("between")), 8, 9)
	if v, err := fence.Read(ctx, s, "absent", 4); err != nil || v != nil {
		t.Fatalf("read of an absent key: %q, %v; want nil", v, err)
	}
	fenced(fence.Write(ctx, s, "absent", 3, []byte("x")), 3, 4)

	// Update computes from the stored value.
	v, err := fence.Update(ctx, s, "a", 9, func(old []byte) ([]byte, error) { return append(old, '+'), nil })
	if err != nil || string(v) != "h7+" {
		t.Fatalf("update: %q, %v", v, err)
	}
	boom := errors.New("boom")
	if _, err := fence.Update(ctx, s, "a", 9, func([]byte) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("update whose function fails: %v; want its error", err)
	}

	// Delete keeps the token.
	must(fence.Delete(ctx, s, "a", 10))
	if e := load("a"); e.Value != nil || e.Token != 10 {
		t.Fatalf("after delete: %+v; want no value with token 10", e)
	}
	fenced(fence.Write(ctx, s, "a", 9, []byte("late")), 9, 10)

	// Bad arguments.
	for _, tok := range []int64{0, -1} {
		if err := fence.Write(ctx, s, "a", tok, nil); !errors.Is(err, fence.ErrInvalidToken) || !errors.Is(err, task.ErrInvalidArgument) {
			t.Fatalf("token %d: %v; want ErrInvalidToken", tok, err)
		}
	}
	if _, err := fence.Update(ctx, s, "a", 11, nil); !errors.Is(err, task.ErrInvalidArgument) {
		t.Fatalf("nil function: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := fence.Write(cctx, s, "a", 11, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled context: %v", err)
	}
	var nilCtx context.Context // refused by the fence before the store is called
	if err := fence.Write(nilCtx, s, "a", 11, nil); !errors.Is(err, executor.ErrNilContext) {
		t.Fatalf("nil context: %v; want executor.ErrNilContext", err)
	}
}

// hooked calls hook once, after the first Load that follows arm.
type hooked[V any] struct {
	fence.Store[V]
	hook func()
}

func (h *hooked[V]) Load(ctx context.Context, key string) (fence.Entry, V, error) {
	e, v, err := h.Store.Load(ctx, key)
	if f := h.hook; f != nil {
		h.hook = nil
		f()
	}
	return e, v, err
}

// testInterleaved: a newer holder's write lands between a former holder's
// load (which passes the check) and its compare-and-swap. The
// compare-and-swap must fail, and the check made again on the new load
// must refuse the former holder.
func testInterleaved[V any](t *testing.T, s fence.Store[V]) {
	ctx := context.Background()
	if err := fence.Write(ctx, s, "k", 1, []byte("h1")); err != nil {
		t.Fatal(err)
	}
	h := &hooked[V]{Store: s}
	h.hook = func() {
		if err := fence.Write(ctx, s, "k", 3, []byte("h3")); err != nil {
			t.Errorf("newer holder: %v", err)
		}
	}
	err := fence.Write(ctx, h, "k", 2, []byte("h2"))
	if !errors.Is(err, fence.ErrFenced) {
		t.Fatalf("former holder whose check was overtaken: %v; want ErrFenced", err)
	}
	if e, _, _ := s.Load(ctx, "k"); string(e.Value) != "h3" || e.Token != 3 {
		t.Fatalf("stored %+v; want h3 with token 3", e)
	}
	// A write by the same holder in between is a conflict, not a fence:
	// the update runs again on the new value.
	h.hook = func() {
		if err := fence.Write(ctx, s, "k", 3, []byte("h3b")); err != nil {
			t.Errorf("same holder: %v", err)
		}
	}
	calls := 0
	v, err := fence.Update(ctx, h, "k", 3, func(old []byte) ([]byte, error) { calls++; return append(old, '!'), nil })
	if err != nil || string(v) != "h3b!" || calls != 2 {
		t.Fatalf("update across a conflict: %q, %v, %d calls; want h3b! after 2 calls", v, err, calls)
	}
	// A newer holder's claim (a Read: only the token changes, not the
	// value) between a former holder's load and its compare-and-swap
	// must refuse the former holder too.
	h.hook = func() {
		if _, err := fence.Read(ctx, s, "k", 9); err != nil {
			t.Errorf("newer holder's claim: %v", err)
		}
	}
	err = fence.Write(ctx, h, "k", 5, []byte("h5"))
	if !errors.Is(err, fence.ErrFenced) {
		t.Fatalf("former holder overtaken by a claim that changed only the token: %v; want ErrFenced", err)
	}
	if e, _, _ := s.Load(ctx, "k"); string(e.Value) != "h3b!" || e.Token != 9 {
		t.Fatalf("stored %+v; want h3b! with token 9", e)
	}
}

// testConcurrent: holders 1..G (tokens), started in a shuffled order, each
// append their token to one key's log with Update, K times. The log (the
// key's final value) is the store's order of accepted writes: tokens
// never go down in it; every Update that succeeded is in it once, and no
// refused one; every refusal names a token that is in the log and above
// the refused one.
func testConcurrent[V any](t *testing.T, s fence.Store[V]) {
	const G, K = 8, 20
	ctx := context.Background()
	order := rand.Perm(G)
	t.Logf("holders start in the order of tokens %v (plus one)", order)
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := map[int64]int{}
	var refusals []fence.FencedError
	var errs []error
	start := make(chan struct{})
	for _, g := range order {
		token := int64(g + 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range K {
				_, err := fence.Update(ctx, s, "log", token, func(old []byte) ([]byte, error) {
					return binary.BigEndian.AppendUint64(bytes.Clone(old), uint64(token)), nil
				})
				mu.Lock()
				var fe *fence.FencedError
				switch {
				case err == nil:
					accepted[token]++
				case errors.As(err, &fe):
					refusals = append(refusals, *fe)
				default:
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	e, _, err := s.Load(ctx, "log")
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Value)%8 != 0 {
		t.Fatalf("log of %d bytes", len(e.Value))
	}
	inLog := map[int64]int{}
	var last int64
	for i := 0; i < len(e.Value); i += 8 {
		tok := int64(binary.BigEndian.Uint64(e.Value[i:]))
		if tok < last {
			t.Fatalf("write %d of the log: token %d after token %d", i/8, tok, last)
		}
		last = tok
		inLog[tok]++
	}
	if e.Token != last {
		t.Errorf("stored token %d, last in the log %d", e.Token, last)
	}
	for tok := int64(1); tok <= G; tok++ {
		if inLog[tok] != accepted[tok] {
			t.Errorf("token %d: %d updates succeeded, %d in the log", tok, accepted[tok], inLog[tok])
		}
	}
	for _, fe := range refusals {
		if fe.Stored <= fe.Token || inLog[fe.Stored] == 0 {
			t.Errorf("token %d refused by token %d (in the log %d times)", fe.Token, fe.Stored, inLog[fe.Stored])
		}
	}
	if accepted[G] != K {
		t.Errorf("the highest token had %d of %d updates accepted", accepted[G], K)
	}
	t.Logf("%d updates accepted, %d refused", len(e.Value)/8, len(refusals))
}
