package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/zkflow/zkflow/fakezk"
)

// The dataDir: a snapshot of the tree and a write-ahead log of the commits
// since, in a directory of fakezk's own (storeDir), so that a real
// server's version-2 files are never read nor written.
//
//	snapshot: "fakezk-snap-1\n" then one record: {"zxid":..,"nodes":[..]}
//	log:      "fakezk-log-1\n"  then one record per commit (fakezk.Commit)
//	record:   length (uint32, big-endian), CRC-32C of the payload, payload (JSON)
//
// Every commit is appended and fsync'd before fakezk queues its reply
// (fakezk.Config.Journal), so what a client was told survives a SIGKILL.
// Every snapEvery commits the tree is written to a new snapshot (written
// to a temporary file, synced, renamed over the old one, the directory
// synced) and the log starts again; a log record whose zxid the snapshot
// already holds (a crash between the two) is skipped at recovery. A last
// record cut short or whose CRC fails at the end of the log, or a tail of
// zero bytes (a write the crash tore) is dropped and the log truncated
// before it; any other damage stops the start with an error naming the
// file and offset.
const (
	storeDir  = "fakezk-1"
	snapMagic = "fakezk-snap-1\n"
	logMagic  = "fakezk-log-1\n"
	snapEvery = 10000
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errCorrupt is wrapped by every error of damage recovery cannot pass.
var errCorrupt = errors.New("corrupt dataDir")

type snapshot struct {
	Zxid  int64         `json:"zxid"`
	Nodes []fakezk.Node `json:"nodes"`
}

// store is the dataDir of one running server. Its journal method is
// fakezk's Config.Journal: it runs under the server's lock, one commit at
// a time.
type store struct {
	dir     string // dataDir/fakezk-1
	logDir  string // dataLogDir/fakezk-1 (dir if none)
	log     *os.File
	locks   []*os.File             // dir/lock and logDir/lock, flock'd while the store is open
	nodes   map[string]fakezk.Node // the tree as the log has it
	zxid    int64
	pending int                  // commits since the snapshot
	every   int                  // snapEvery, smaller in tests
	fail    func(error)          // a write that failed: the process cannot go on
	logf    func(string, ...any) // the server's log
}

// recovered is what openStore found on disk.
type recovered struct {
	fresh     bool
	zxid      int64
	nodes     []fakezk.Node
	replayed  int   // log records applied
	tornAt    int64 // offset the log was truncated at (-1: not torn)
	snapshots int
}

// openStore reads dataDir (creating it if needed) and returns the store
// and the state to restore. A fresh dataDir gives fresh = true and no
// nodes: the caller takes a new server's snapshot (store.reset).
func openStore(dataDir, logDir string) (*store, recovered, error) {
	if logDir == "" {
		logDir = dataDir
	}
	st := &store{dir: filepath.Join(dataDir, storeDir), logDir: filepath.Join(logDir, storeDir), every: snapEvery, nodes: map[string]fakezk.Node{}}
	rec := recovered{tornAt: -1}
	for _, d := range []string{st.dir, st.logDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, rec, err
		}
	}
	if err := st.takeLock(); err != nil {
		st.close()
		return nil, rec, err
	}
	rec, err := st.read(rec)
	if err != nil {
		st.close()
		return nil, rec, err
	}
	return st, rec, nil
}

// errInUse is what openStore returns when another process has the
// dataDir open.
var errInUse = errors.New("dataDir in use by another process")

// takeLock flocks dir/lock, and logDir/lock when the log is elsewhere:
// two servers on one dataDir, or on one dataLogDir, would each write a
// log the other does not know. The kernel drops the locks when the
// process dies, SIGKILL included, so a crash leaves no stale lock.
func (st *store) takeLock() error {
	dirs := []string{st.dir}
	if !sameDir(st.dir, st.logDir) {
		dirs = append(dirs, st.logDir)
	}
	for _, d := range dirs {
		f, err := os.OpenFile(filepath.Join(d, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		st.locks = append(st.locks, f)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			return fmt.Errorf("%w: %s (%v)", errInUse, d, err)
		}
	}
	return nil
}

// sameDir reports whether a and b name one directory (a flock taken
// twice on one file by one process, through two opens, would refuse
// itself).
func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	ia, err := os.Stat(a)
	if err != nil {
		return false
	}
	ib, err := os.Stat(b)
	return err == nil && os.SameFile(ia, ib)
}

// read recovers the snapshot and the log (see openStore).
func (st *store) read(rec recovered) (recovered, error) {
	snapPath, logPath := st.snapPath(), st.logPath()
	snapData, err := os.ReadFile(snapPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, err := os.Stat(logPath); err == nil {
			return rec, fmt.Errorf("%w: %s has a log and no snapshot (%s)", errCorrupt, st.dir, snapPath)
		}
		rec.fresh = true
		return rec, nil
	case err != nil:
		return rec, err
	}
	var snap snapshot
	if err := decodeFile(snapData, snapMagic, &snap); err != nil {
		return rec, fmt.Errorf("%w: snapshot %s: %v", errCorrupt, snapPath, err)
	}
	st.zxid = snap.Zxid
	for _, n := range snap.Nodes {
		st.nodes[n.Path] = n
	}
	f, err := os.OpenFile(logPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return rec, err
	}
	good, replayed, torn, err := st.replay(f)
	if err != nil {
		f.Close()
		return rec, fmt.Errorf("%w: log %s: %v", errCorrupt, logPath, err)
	}
	if torn {
		if err := f.Truncate(good); err != nil {
			f.Close()
			return rec, err
		}
		rec.tornAt = good
	}
	if good == 0 { // an empty log file (a crash while it was made)
		if _, err := f.WriteAt([]byte(logMagic), 0); err != nil {
			f.Close()
			return rec, err
		}
		good = int64(len(logMagic))
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return rec, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return rec, err
	}
	st.log = f
	st.pending = replayed
	rec.zxid, rec.nodes, rec.replayed = st.zxid, st.sorted(), replayed
	return rec, nil
}

// replay applies the log's records to st.nodes. It returns the offset
// after the last good record and whether the bytes after it are a torn
// last record.
func (st *store) replay(f *os.File) (good int64, n int, torn bool, err error) {
	data, err := io.ReadAll(f)
	if err != nil {
		return 0, 0, false, err
	}
	if len(data) == 0 {
		return 0, 0, false, nil
	}
	if !bytes.HasPrefix(data, []byte(logMagic)) {
		if len(data) < len(logMagic) && bytes.HasPrefix([]byte(logMagic), data) {
			return 0, 0, true, nil // the header itself was torn
		}
		return 0, 0, false, errors.New("not a fakezk log (bad header)")
	}
	off := len(logMagic)
	for off < len(data) {
		if allZero(data[off:]) {
			// An append the crash tore after the file grew: its bytes
			// never written read as zeros (a zero header would pass as
			// an empty record: the CRC-32C of nothing is 0).
			return int64(off), n, true, nil
		}
		payload, next, ok := record(data, off)
		if !ok {
			return int64(off), n, true, nil
		}
		if payload == nil {
			// Length and CRC do not agree with what follows, yet the
			// file goes on: not a torn tail.
			return 0, 0, false, fmt.Errorf("record at offset %d: bad checksum", off)
		}
		var c fakezk.Commit
		if err := json.Unmarshal(payload, &c); err != nil {
			return 0, 0, false, fmt.Errorf("record at offset %d: %v", off, err)
		}
		switch {
		case c.Zxid <= st.zxid && n == 0:
			// Held by the snapshot already (a crash between writing it
			// and starting the log again).
		case c.Zxid <= st.zxid:
			return 0, 0, false, fmt.Errorf("record at offset %d: zxid %#x after %#x", off, c.Zxid, st.zxid)
		default:
			st.apply(c)
			n++
		}
		off = next
	}
	return int64(off), n, false, nil
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// record reads the record at off: its payload and the offset after it.
// ok is false if the record runs past the end of data or its CRC fails
// while it ends the data (a torn write); payload is nil with ok true if
// the CRC fails on a record that more data follows.
func record(data []byte, off int) (payload []byte, next int, ok bool) {
	if len(data)-off < 8 {
		return nil, 0, false
	}
	size := int(binary.BigEndian.Uint32(data[off:]))
	sum := binary.BigEndian.Uint32(data[off+4:])
	end := off + 8 + size
	if size > len(data) || end > len(data) {
		return nil, 0, false
	}
	p := data[off+8 : end]
	if crc32.Checksum(p, castagnoli) != sum {
		if end == len(data) {
			return nil, 0, false
		}
		return nil, end, true
	}
	return p, end, true
}

func (st *store) apply(c fakezk.Commit) {
	st.zxid = c.Zxid
	for _, n := range c.Nodes {
		st.nodes[n.Path] = n
	}
	for _, p := range c.Deleted {
		delete(st.nodes, p)
	}
}

func (st *store) sorted() []fakezk.Node {
	out := make([]fakezk.Node, 0, len(st.nodes))
	for _, p := range slices.Sorted(maps.Keys(st.nodes)) {
		out = append(out, st.nodes[p])
	}
	return out
}

func (st *store) snapPath() string { return filepath.Join(st.dir, "snapshot") }
func (st *store) logPath() string  { return filepath.Join(st.logDir, "log") }

// journal is fakezk's Config.Journal: the commit is in the log, synced,
// when it returns; every st.every commits a snapshot replaces the log.
func (st *store) journal(c fakezk.Commit) {
	st.apply(c)
	if err := st.append(c); err != nil {
		st.fail(fmt.Errorf("write-ahead log %s: %w", st.logPath(), err))
		return
	}
	st.pending++
	if st.pending >= st.every {
		if err := st.reset(); err != nil {
			st.fail(fmt.Errorf("snapshot in %s: %w", st.dir, err))
		}
	}
}

func (st *store) append(c fakezk.Commit) error {
	payload, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if _, err := st.log.Write(frameRecord(payload)); err != nil {
		return err
	}
	return st.log.Sync()
}

func frameRecord(payload []byte) []byte {
	b := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint32(b, uint32(len(payload)))
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// decodeFile reads a file of one record after magic into v.
func decodeFile(data []byte, magic string, v any) error {
	if !bytes.HasPrefix(data, []byte(magic)) {
		return errors.New("bad header")
	}
	payload, next, ok := record(data, len(magic))
	if !ok || payload == nil || next != len(data) {
		return errors.New("bad length or checksum")
	}
	return json.Unmarshal(payload, v)
}

// reset writes the tree as the new snapshot and starts an empty log.
// With nodes (a fresh dataDir), they are the tree.
func (st *store) reset() error {
	payload, err := json.Marshal(snapshot{Zxid: st.zxid, Nodes: st.sorted()})
	if err != nil {
		return err
	}
	data := append([]byte(snapMagic), frameRecord(payload)...)
	if err := writeSynced(st.snapPath(), data); err != nil {
		return err
	}
	if err := syncDir(st.dir); err != nil {
		return err
	}
	// The snapshot holds every commit of the log: a crash from here on
	// finds records the snapshot has, which recovery skips.
	if st.log == nil {
		f, err := os.OpenFile(st.logPath(), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		st.log = f
	}
	if err := st.log.Truncate(0); err != nil {
		return err
	}
	if _, err := st.log.WriteAt([]byte(logMagic), 0); err != nil {
		return err
	}
	if _, err := st.log.Seek(int64(len(logMagic)), io.SeekStart); err != nil {
		return err
	}
	if err := st.log.Sync(); err != nil {
		return err
	}
	st.pending = 0
	st.logf("snapshot at zxid 0x%x: %d nodes", st.zxid, len(st.nodes))
	return syncDir(st.logDir)
}

// seed makes st's tree the given one (a fresh server's, or a restored
// one) and writes it as the snapshot.
func (st *store) seed(zxid int64, nodes []fakezk.Node) error {
	st.zxid = zxid
	clear(st.nodes)
	for _, n := range nodes {
		st.nodes[n.Path] = n
	}
	return st.reset()
}

func writeSynced(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (st *store) close() error {
	var err error
	if st.log != nil {
		err = st.log.Sync()
		if cerr := st.log.Close(); err == nil {
			err = cerr
		}
		st.log = nil
	}
	for _, f := range st.locks {
		f.Close() // and with it the flock
	}
	st.locks = nil
	return err
}
