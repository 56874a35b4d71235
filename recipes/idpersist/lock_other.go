//go:build !unix

package idpersist

import "sync"

// lockMu stands in for flock where there is none: it excludes the
// FileStores of this process only.
var lockMu sync.Mutex

// lockFile takes the process's lock (no file lock on this system).
func lockFile(string) (unlock func(), err error) {
	lockMu.Lock()
	return lockMu.Unlock, nil
}
