package fence

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// Entry is what a fenced store keeps under a key: the value and the
// fencing token of the holder that last wrote it.
type Entry struct {
	// Value is the value; nil means none (never written, or deleted by a
	// fenced Delete, which keeps the token).
	Value []byte
	// Token is the highest token that has written the key; 0 if none.
	Token int64
}

// Store is the one primitive fencing needs from a key/value store: read
// an entry with its version, and replace it only if its version is still
// the one read (compare-and-swap). The fence keeps its policy (which
// token may write) out of the store: an implementation compares versions
// and nothing else.
//
// V is the store's version type (a row counter, etcd's ModRevision...);
// the fence never looks inside it, it only hands back what Load returned.
// A key's version must change at every write, also one that changes only
// the entry's token (a holder's claim), and never come back: a version
// computed from the value alone (an S3 ETag of the value) does not do.
// Keys are compared exactly (no case folding, no trimming).
//
// The slices are the caller's: CompareAndSwap keeps a copy of e.Value,
// not e.Value (the caller may reuse it once the call returns), and the
// Entry that Load returns is the caller's to change. A store that kept
// or handed out its own slices would let a former holder's buffer, or
// what a holder's Read returned, change a key's value without a write.
//
// Methods may be called from several goroutines at once, and must return
// once ctx is done.
type Store[V any] interface {
	// Load returns the entry under key and its version. A key with no
	// entry gives Entry{} (Token 0, Value nil) and a version that
	// CompareAndSwap takes to mean "still absent".
	Load(ctx context.Context, key string) (Entry, V, error)
	// CompareAndSwap stores e under key if the key's version is still
	// old, and reports whether it did. It must report false only when the
	// version changed since the Load that returned old (another write
	// went through): the fence retries on false and relies on that for
	// progress. An error means the outcome is unknown unless the error
	// says otherwise.
	CompareAndSwap(ctx context.Context, key string, old V, e Entry) (swapped bool, err error)
}

// TaskStore is Store for code that runs as task chains on an executor:
// each operation is a task, which must not block (see package task). A
// simulated store implements it (internal/simstore), and so can a store
// with an asynchronous client.
type TaskStore[V any] interface {
	Load(key string) task.Task[Loaded[V]]
	CompareAndSwap(key string, old V, e Entry) task.Task[bool]
}

// Loaded is an entry with its version, as TaskStore.Load returns it.
type Loaded[V any] struct {
	Entry
	Version V
}

// ErrFenced is the error of a write or read by a holder whose token is
// below the token that has written the key: a newer holder has written,
// so this one's hold has ended. Match it with errors.Is; the error is a
// *FencedError.
var ErrFenced = errors.New("fence: a newer holder has written")

// FencedError says which key refused which token, and the token that
// had written it.
type FencedError struct {
	Key    string
	Token  int64 // the refused writer's (or reader's) token
	Stored int64 // the token stored with the key, above Token
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("fence: key %q: token %d refused: token %d has written it", e.Key, e.Token, e.Stored)
}

// Is makes errors.Is(err, ErrFenced) true.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// ErrInvalidToken is the error of a token that is not positive (0 is
// "no writer yet"). It wraps task.ErrInvalidArgument.
var ErrInvalidToken = fmt.Errorf("fence: token must be positive: %w", task.ErrInvalidArgument)

// OpError is a store's error, naming the operation and the key.
type OpError struct {
	Op  string // "load" or "compare-and-swap"
	Key string
	Err error
}

func (e *OpError) Error() string { return fmt.Sprintf("fence: %s %q: %v", e.Op, e.Key, e.Err) }
func (e *OpError) Unwrap() error { return e.Err }

// check validates a call's arguments.
func check(key string, token int64) error {
	if token <= 0 {
		return fmt.Errorf("%w (key %q, token %d)", ErrInvalidToken, key, token)
	}
	return nil
}
