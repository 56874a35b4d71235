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
// Store(v) must leave the mark at the greater of v and the mark it holds,
// atomically: a leader that lost its role without knowing it yet (its
// write stalled past its session) may store a lower value after the new
// leader's higher one, and the mark must not go down. All the replicas of
// one service must share one Store (one file on storage they all reach,
// or a Store backed by a replicated system, with a compare-and-set):
// after ZooKeeper loses its data, whichever replica leads seeds the
// sequence from it.
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
// torn write. Store holds an exclusive lock (flock) on the file
// "<path>.lock" beside it while it reads the mark and writes the greater
// value, so the processes that share the file never lower the mark (on
// one host, or a network file system that honours flock; on systems
// without flock, only the FileStores of one process exclude each other).
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

// Store makes v the mark durably, unless the mark is at or above it
// already: under the lock, it reads the mark and, if lower, writes v (temp
// file, fsync, rename, fsync of the directory). A negative v fails with
// ErrNegative and writes nothing; so does a mark that cannot be read
// (ErrCorrupt: the file is left for an operator to look at).
func (f *FileStore) Store(v int64) (err error) {
	if v < 0 {
		return fmt.Errorf("%w: %d", ErrNegative, v)
	}
	unlock, err := lockFile(f.path + ".lock")
	if err != nil {
		return fmt.Errorf("idpersist: store %s: lock: %w", f.path, err)
	}
	defer unlock()
	if cur, err := f.Load(); err != nil {
		return err
	} else if cur >= v {
		return nil
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

// Stores keeps the durable marks of the sequences under Config.Parent,
// one Store per sequence name, and which sequences are live: a name is
// registered before the leader writes anything for it and retired once
// its node is removed. After ZooKeeper loses its data the leader restores
// every live sequence from its mark. Every method returns only once its
// effect is durable.
type Stores interface {
	// Mark returns the Store of the named sequence.
	Mark(name string) (Store, error)
	// Register records name as live.
	Register(name string) error
	// Retire records that name was removed; its mark is kept.
	Retire(name string) error
	// Names lists the live names.
	Names() ([]string, error)
}

// DirStores keeps each sequence's mark in a FileStore "<name>.mark" in one
// directory, and a live sequence as an empty file "<name>.live" there.
type DirStores struct {
	dir string
}

// NewDirStores returns the stores in dir, which must exist.
func NewDirStores(dir string) (*DirStores, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: %q is not a directory", ErrBadPath, dir)
	}
	return &DirStores{dir: dir}, nil
}

const liveSuffix = ".live"

func (d *DirStores) file(name, suffix string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return "", fmt.Errorf("%w: sequence name %q", ErrBadPath, name)
	}
	return filepath.Join(d.dir, name+suffix), nil
}

// Mark implements Stores.
func (d *DirStores) Mark(name string) (Store, error) {
	p, err := d.file(name, ".mark")
	if err != nil {
		return nil, err
	}
	return NewFileStore(p)
}

// Register implements Stores: it creates name's live file and syncs it and
// the directory (nothing to do if it exists).
func (d *DirStores) Register(name string) error {
	p, err := d.file(name, liveSuffix)
	if err != nil {
		return err
	}
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	f, err := os.Create(p)
	if err != nil {
		return fmt.Errorf("idpersist: register %s: %w", name, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("idpersist: register %s: %w", name, err)
	}
	return syncDir(d.dir)
}

// Retire implements Stores: it removes name's live file and syncs the
// directory.
func (d *DirStores) Retire(name string) error {
	p, err := d.file(name, liveSuffix)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("idpersist: retire %s: %w", name, err)
	}
	return syncDir(d.dir)
}

// Names implements Stores.
func (d *DirStores) Names() ([]string, error) {
	es, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, fmt.Errorf("idpersist: list %s: %w", d.dir, err)
	}
	var out []string
	for _, e := range es {
		if n, ok := strings.CutSuffix(e.Name(), liveSuffix); ok && n != "" && !e.IsDir() {
			out = append(out, n)
		}
	}
	return out, nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("idpersist: open dir %s: %w", dir, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("idpersist: sync dir %s: %w", dir, err)
	}
	return nil
}
