package fence

import (
	"context"
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// Write stores value under key on behalf of the holder of token, unless a
// holder with a higher token has written the key: then it fails with a
// *FencedError (errors.Is ErrFenced) and the store is unchanged. The check
// and the write are one compare-and-swap: a write by a newer holder that
// lands between them makes the compare-and-swap fail, and Write loads and
// checks again. It returns when the write went through, was refused, the
// store failed (an *OpError; a failed CompareAndSwap leaves the outcome
// unknown), or ctx ended (ctx's error). A nil ctx is refused, the store
// not called, with an error wrapping executor.ErrNilContext (so are
// Delete's, Update's and Read's). Each lost compare-and-swap means
// another write went through (see Store), so Write loops only while others
// keep writing the key.
func Write[V any](ctx context.Context, s Store[V], key string, token int64, value []byte) error {
	_, err := Update(ctx, s, key, token, func([]byte) ([]byte, error) { return value, nil })
	return err
}

// Delete removes key's value on behalf of the holder of token, as Write
// does: the entry stays, with no value and the token, so a former
// holder's late write is still refused. Never remove a fenced key's entry
// from the store by other means: a key with no entry accepts any token.
func Delete[V any](ctx context.Context, s Store[V], key string, token int64) error {
	return Write(ctx, s, key, token, nil)
}

// Update is a fenced read-modify-write: it loads key, fails with a
// *FencedError if a higher token has written it, and otherwise stores
// fn(old value) with token by compare-and-swap, calling fn again on the
// newly loaded value after each lost compare-and-swap. It returns the value
// stored. fn must not block; an error from fn ends Update with that
// error, the store unchanged.
//
// Unlike a Read followed by a Write, what fn is given is what the write
// replaces: a former holder's write that lands in between makes the
// compare-and-swap fail and fn runs again on it.
func Update[V any](ctx context.Context, s Store[V], key string, token int64, fn func(old []byte) ([]byte, error)) ([]byte, error) {
	if fn == nil {
		return nil, fmt.Errorf("fence: nil update function: %w", task.ErrInvalidArgument)
	}
	return run(ctx, s, &attempt[V]{key: key, token: token, update: fn})
}

// Read returns key's value on behalf of the holder of token, and claims
// the key: it fails with a *FencedError if a higher token has written
// it, and if the stored token is below token it raises it to token (a
// compare-and-swap that keeps the value). From then on no holder with a
// lower token writes the key: what Read returned stays the value until
// this holder or a newer one writes. So a holder's first Read of a key
// costs a write; later ones by the same holder only load. A key with no
// entry reads as nil (and gets an entry with no value and the token).
//
// To read without claiming (an observer that holds no lock), call the
// store's Load.
func Read[V any](ctx context.Context, s Store[V], key string, token int64) ([]byte, error) {
	return run(ctx, s, &attempt[V]{key: key, token: token})
}

// run drives a to its end against a blocking store.
func run[V any](ctx context.Context, s Store[V], a *attempt[V]) ([]byte, error) {
	if err := check(a.key, a.token); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("fence: nil store: %w", task.ErrInvalidArgument)
	}
	if ctx == nil {
		return nil, errNilContext // the store is not called
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e, v, err := s.Load(ctx, a.key)
		if err != nil {
			return nil, &OpError{Op: "load", Key: a.key, Err: err}
		}
		cas, err := a.loaded(e, v)
		if err != nil {
			return nil, err
		}
		if !cas {
			return a.value, nil
		}
		ok, err := s.CompareAndSwap(ctx, a.key, a.version, a.next)
		if err != nil {
			return nil, &OpError{Op: "compare-and-swap", Key: a.key, Err: err}
		}
		if !a.swapped(ok) {
			return a.value, nil
		}
	}
}
