package fence

import (
	"context"
	"fmt"
	"slices"
	"sync"

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

// Load implements Store. On a nil *Memory it fails with an error wrapping
// task.ErrInvalidArgument.
func (m *Memory) Load(ctx context.Context, key string) (Entry, uint64, error) {
	if m == nil {
		return Entry{}, 0, errNilMemory
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
// error wrapping task.ErrInvalidArgument.
func (m *Memory) CompareAndSwap(ctx context.Context, key string, old uint64, e Entry) (bool, error) {
	if m == nil {
		return false, errNilMemory
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
