// Package boltstore is a fence.Store on bbolt (go.etcd.io/bbolt), an
// embedded key/value database in one file, written in Go (no cgo): a
// process's fenced writes to a local database, refused once a newer
// lock holder has written.
//
// It is a module of its own (go get
// github.com/zkflow/zkflow/recipes/fence/boltstore), so that bbolt is in
// the module graph of the programs that use it only.
//
// Each key's entry is kept in one bucket as version (8 bytes), token (8
// bytes), a byte saying whether there is a value, and the value. The
// version counts the key's writes (0: no entry). CompareAndSwap is one
// read-write transaction: bbolt runs one at a time and commits it
// durably (fsync) before it returns, so the compare and the write are
// atomic, and a write that returned true is on disk.
//
//	db, err := bolt.Open("state.db", 0o600, nil)
//	...
//	st, err := boltstore.New(db, "fenced")
//	...
//	err = fence.Write(ctx, st, "config", held.Token(), value)
//
// The package is apart from recipes/fence so that only programs that
// import it depend on bbolt (go.etcd.io/bbolt and golang.org/x/sys).
//
// # Why bbolt
//
// Of the embedded databases that build without cgo, bbolt costs the
// least: go.etcd.io/bbolt v1.4.3 (1.1 MB of source) and golang.org/x/sys
// (of which only the unix or windows package is built), four lines in
// go.sum beside those of its tests' modules; modernc.org/sqlite is
// SQLite's C translated to Go, tens of MB in a dozen modules. Its read-write transactions are serializable (one writer at a
// time), which is all a compare-and-swap needs.
//
// # Limits
//
// A write must be on disk when CompareAndSwap returns, or a crash of
// the machine could take the newest token back and let a former holder's
// write in after it: a database with NoSync set (bolt.Options.NoSync,
// DB.NoSync), whose commits skip the fsync, is refused by New, and
// CompareAndSwap fails without writing while DB.NoSync is set (both with
// an error wrapping task.ErrInvalidArgument).
//
// bbolt calls cannot be interrupted: ctx is checked before each
// transaction begins, and a call waits for bbolt's writer lock however
// long another write transaction of the process holds it. The database
// file is locked by one process at a time (bolt.Open waits for it, for
// ever unless bolt.Options.Timeout is set), so the fence protects a
// store that one process at a time opens; for holders in several
// processes, put the entries in a store they all reach.
package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/fence"
	"github.com/zkflow/zkflow/task"
)

// Store is a fence.Store in one bucket of a bbolt database. Its version
// is the key's count of writes. Safe for concurrent use.
type Store struct {
	db     *bolt.DB
	bucket []byte
}

var _ fence.Store[uint64] = (*Store)(nil)

// ErrCorrupt is the error of an entry this package did not write.
var ErrCorrupt = errors.New("boltstore: entry not written by boltstore")

// New returns a Store keeping its entries in bucket (created if absent)
// of db. The caller opens and closes db, without NoSync (see Limits).
// On a database opened read-only (bolt.Options.ReadOnly) the bucket must
// exist (else an error wrapping bolt.ErrBucketNotFound): the Store loads,
// and its CompareAndSwap fails with bolt.ErrDatabaseReadOnly.
func New(db *bolt.DB, bucket string) (*Store, error) {
	if db == nil || bucket == "" {
		return nil, fmt.Errorf("boltstore: nil database or empty bucket name: %w", task.ErrInvalidArgument)
	}
	b := []byte(bucket)
	if db.IsReadOnly() {
		if err := db.View(func(tx *bolt.Tx) error {
			if tx.Bucket(b) == nil {
				return bolt.ErrBucketNotFound
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("boltstore: bucket %q of a read-only database: %w", bucket, err)
		}
		return &Store{db: db, bucket: b}, nil
	}
	if db.NoSync {
		return nil, errNoSync
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(b)
		return err
	}); err != nil {
		return nil, fmt.Errorf("boltstore: bucket %q: %w", bucket, err)
	}
	return &Store{db: db, bucket: b}, nil
}

const header = 17 // version, token, has-value

func decode(raw []byte) (fence.Entry, uint64, error) {
	if raw == nil {
		return fence.Entry{}, 0, nil
	}
	if len(raw) < header || raw[16] > 1 {
		return fence.Entry{}, 0, ErrCorrupt
	}
	e := fence.Entry{Token: int64(binary.BigEndian.Uint64(raw[8:16]))}
	if raw[16] == 1 {
		e.Value = append([]byte{}, raw[header:]...) // raw is valid only in its transaction
	}
	return e, binary.BigEndian.Uint64(raw[:8]), nil
}

func encode(e fence.Entry, version uint64) []byte {
	raw := make([]byte, header, header+len(e.Value))
	binary.BigEndian.PutUint64(raw[:8], version)
	binary.BigEndian.PutUint64(raw[8:16], uint64(e.Token))
	if e.Value != nil {
		raw[16] = 1
	}
	return append(raw, e.Value...)
}

// errNoSync is the error of New and CompareAndSwap on a database whose
// commits skip the fsync.
var errNoSync = fmt.Errorf("boltstore: database has NoSync set: its commits are not on disk when they return: %w", task.ErrInvalidArgument)

// errNilStore is the error of the methods of a nil or zero *Store (not
// made by New).
var errNilStore = fmt.Errorf("boltstore: nil or zero *Store (not made by New): %w", task.ErrInvalidArgument)

// errNilContext is the error of the methods given a nil ctx.
var errNilContext = fmt.Errorf("boltstore: %w", executor.ErrNilContext)

// Load implements fence.Store: a read-only transaction. On a nil or zero
// *Store (not made by New) it fails with an error wrapping
// task.ErrInvalidArgument, and with a nil ctx with one wrapping
// executor.ErrNilContext.
func (s *Store) Load(ctx context.Context, key string) (e fence.Entry, version uint64, err error) {
	if s == nil || s.db == nil {
		return fence.Entry{}, 0, errNilStore
	}
	if ctx == nil {
		return fence.Entry{}, 0, errNilContext
	}
	if err := ctx.Err(); err != nil {
		return fence.Entry{}, 0, err
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(s.bucket)
		if b == nil {
			return fmt.Errorf("boltstore: bucket %q is gone", s.bucket)
		}
		e, version, err = decode(b.Get([]byte(key)))
		return err
	})
	return e, version, err
}

// CompareAndSwap implements fence.Store: one read-write transaction that
// reads the key's version and, if it is old, writes e with the next. On
// a nil or zero *Store, an empty key or a database with NoSync set it fails,
// writing nothing, with an error wrapping task.ErrInvalidArgument, and
// with a nil ctx with one wrapping executor.ErrNilContext.
func (s *Store) CompareAndSwap(ctx context.Context, key string, old uint64, e fence.Entry) (swapped bool, err error) {
	if s == nil || s.db == nil {
		return false, errNilStore
	}
	if ctx == nil {
		return false, errNilContext
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if key == "" {
		return false, fmt.Errorf("boltstore: empty key: %w", task.ErrInvalidArgument)
	}
	if s.db.NoSync {
		return false, errNoSync
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(s.bucket)
		if b == nil {
			return fmt.Errorf("boltstore: bucket %q is gone", s.bucket)
		}
		_, cur, err := decode(b.Get([]byte(key)))
		if err != nil || cur != old {
			return err
		}
		swapped = true
		return b.Put([]byte(key), encode(e, old+1))
	})
	if err != nil {
		swapped = false
	}
	return swapped, err
}
