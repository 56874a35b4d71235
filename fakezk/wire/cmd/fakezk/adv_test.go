package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The command's doc: "A torn last log record is dropped". A crash during
// an append can leave the file longer with the new bytes not written:
// zeros where the record should be (a file system that logs the size
// before the data, such as ext4 with data=writeback). A zero header
// reads as a record of length 0 whose CRC-32C (that of no bytes) is 0:
// it passes the checksum and fails to decode, and the start is refused
// as a corrupt dataDir instead of dropping the torn tail.
func TestAdvZeroFilledLogTail(t *testing.T) {
	for _, zeros := range []int{8, 100} {
		t.Run(fmt.Sprint(zeros, " zero bytes"), func(t *testing.T) {
			dir := t.TempDir()
			srv, st, _ := journaled(t, dir, 100)
			for i := 0; i < 3; i++ {
				if err := srv.AdminCreate(fmt.Sprintf("/n%d", i), []byte("x"), 0); err != nil {
					t.Fatal(err)
				}
			}
			zxid, nodes := srv.Snapshot()
			srv.Close()
			st.close()
			log, err := os.ReadFile(st.logPath())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(st.logPath(), append(log, make([]byte, zeros)...), 0o644); err != nil {
				t.Fatal(err)
			}
			st2, rec, err := openStore(dir, "")
			if err != nil {
				t.Fatalf("a log ending in %d zero bytes (a torn append): %v, want the tail dropped", zeros, err)
			}
			defer st2.close()
			if rec.zxid != zxid || !reflect.DeepEqual(rec.nodes, nodes) || rec.tornAt != int64(len(log)) {
				t.Fatalf("recovered zxid %d, torn at %d; want zxid %d, torn at %d", rec.zxid, rec.tornAt, zxid, len(log))
			}
		})
	}
}

// store.takeLock's reason: "two servers on one dataDir would each write
// a log the other does not know." The lock is taken in dataDir only:
// two servers with different dataDirs and one dataLogDir (zoo.cfg's
// dataLogDir, shared by a copied config) both open the one log, and
// each appends to it and truncates it at its snapshots. The second
// open must be refused as in use.
func TestAdvSharedDataLogDir(t *testing.T) {
	logs := t.TempDir()
	st1, _, err := openStore(t.TempDir(), logs)
	if err != nil {
		t.Fatal(err)
	}
	defer st1.close()
	st2, _, err := openStore(t.TempDir(), logs)
	if err == nil {
		st2.close()
		t.Fatalf("a second store on dataLogDir %s in use was opened (both write %s)", logs, st1.logPath())
	}
	if !errors.Is(err, errInUse) {
		t.Fatalf("second store on a dataLogDir in use: %v, want errInUse", err)
	}
}

// One server whose dataLogDir is its dataDir under another name (a
// symbolic link) still starts: the two locks are one.
func TestAdvDataLogDirSameAsDataDir(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Skip(err)
	}
	st, _, err := openStore(dir, link)
	if err != nil {
		t.Fatalf("dataLogDir a link to dataDir: %v", err)
	}
	st.close()
}
