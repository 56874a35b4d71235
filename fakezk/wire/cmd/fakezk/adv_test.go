package main

import (
	"fmt"
	"os"
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
