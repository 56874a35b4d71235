package idpersist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Store keeps the durable high-water mark: a value at or above every ID any
// generator has handed out. Store(v) returns only once v is durable (it
// survives a crash of the process and of the machine). Load of a store
// that never held a value returns 0.
//
// The leader calls Store only with values that do not go down. All the
// replicas of one service must share one Store (one file on storage they
// all reach, or a Store backed by a replicated system): after ZooKeeper
// loses its data, whichever replica leads seeds the sequence from it.
type Store interface {
	Load() (int64, error)
	Store(v int64) error
}

// Errors of the stores, tested with errors.Is.
var (
	// ErrCorrupt: the stored mark cannot be read back as a number.
	ErrCorrupt = errors.New("idpersist: stored mark is corrupt")
	// ErrNegative: a mark below zero.
	ErrNegative = errors.New("idpersist: negative mark")
	// ErrBadPath: the file store's path is empty or names a directory.
	ErrBadPath = errors.New("idpersist: bad store path")
)

// FileStore keeps the mark in one file as a decimal number and a newline.
// Store writes a temporary file in the same directory, syncs it, renames it
// over the file (atomic on POSIX file systems) and syncs the directory, so
// after a crash the file holds either the old mark or the new one, never a
// torn write.
type FileStore struct {
	path string
}

// NewFileStore returns a store in the file at path, whose directory must
// exist. An empty path, or one that names a directory, fails with
// ErrBadPath.
func NewFileStore(path string) (*FileStore, error) {
	if path == "" || strings.HasSuffix(path, string(os.PathSeparator)) {
		return nil, fmt.Errorf("%w: %q", ErrBadPath, path)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%w: %q is a directory", ErrBadPath, path)
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: directory of %q missing", ErrBadPath, path)
	}
	return &FileStore{path: path}, nil
}

// Path is the file the store writes.
func (f *FileStore) Path() string { return f.path }

// Load reads the mark; a missing file is 0; content that is not a
// non-negative decimal number fails with ErrCorrupt.
func (f *FileStore) Load() (int64, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("idpersist: load %s: %w", f.path, err)
	}
	s, ok := strings.CutSuffix(string(b), "\n")
	if !ok {
		return 0, fmt.Errorf("%w: %s: no final newline (%d bytes)", ErrCorrupt, f.path, len(b))
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%w: %s: %q", ErrCorrupt, f.path, s)
	}
	return v, nil
}

// Store makes v the mark durably: temp file, fsync, rename, fsync of the
// directory. A negative v fails with ErrNegative and writes nothing.
func (f *FileStore) Store(v int64) (err error) {
	if v < 0 {
		return fmt.Errorf("%w: %d", ErrNegative, v)
	}
	dir := filepath.Dir(f.path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("idpersist: store %s: %w", f.path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.WriteString(strconv.FormatInt(v, 10) + "\n"); err != nil {
		return fmt.Errorf("idpersist: store %s: %w", f.path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("idpersist: store %s: sync: %w", f.path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("idpersist: store %s: %w", f.path, err)
	}
	if err = os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("idpersist: store %s: rename: %w", f.path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("idpersist: store %s: open dir: %w", f.path, err)
	}
	defer d.Close()
	if err = d.Sync(); err != nil {
		return fmt.Errorf("idpersist: store %s: sync dir: %w", f.path, err)
	}
	return nil
}
