package fence

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/task"
)

// Memory is a Store in memory, safe for concurrent use: for tests,
// examples and single-process use, and a reference for writing a Store.
// Its version is a per-key counter of writes (0: no entry). The zero
// value is empty and ready to use.
type Memory struct {
	mu sync.Mutex
	m  map[string]memEntry
}

type memEntry struct {
	e       Entry
	version uint64
}

// errNilMemory is the error of a nil *Memory's methods.
var errNilMemory = fmt.Errorf("fence: nil *Memory: %w", task.ErrInvalidArgument)

// errNilContext is the error of Memory's methods and of Write, Update,
// Read and Delete given a nil ctx.
var errNilContext = fmt.Errorf("fence: %w", executor.ErrNilContext)

// Load implements Store. On a nil *Memory it fails with an error wrapping
// task.ErrInvalidArgument, and with a nil ctx with one wrapping
// executor.ErrNilContext.
func (m *Memory) Load(ctx context.Context, key string) (Entry, uint64, error) {
	if m == nil {
		return Entry{}, 0, errNilMemory
	}
	if ctx == nil {
		return Entry{}, 0, errNilContext
	}
	if err := ctx.Err(); err != nil {
		return Entry{}, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	me := m.m[key]
	return Entry{Value: slices.Clone(me.e.Value), Token: me.e.Token}, me.version, nil
}

// CompareAndSwap implements Store. On a nil *Memory it fails with an
// error wrapping task.ErrInvalidArgument, and with a nil ctx with one
// wrapping executor.ErrNilContext (nothing written).
func (m *Memory) CompareAndSwap(ctx context.Context, key string, old uint64, e Entry) (bool, error) {
	if m == nil {
		return false, errNilMemory
	}
	if ctx == nil {
		return false, errNilContext
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	me := m.m[key]
	if me.version != old {
		return false, nil
	}
	if m.m == nil {
		m.m = map[string]memEntry{}
	}
	m.m[key] = memEntry{e: Entry{Value: slices.Clone(e.Value), Token: e.Token}, version: old + 1}
	return true, nil
}
