package task

import (
	"testing"
	"unsafe"
)

// A Scope is made for every child scope: its size is what each costs.
func TestScopeSize(t *testing.T) {
	if n := unsafe.Sizeof(Scope{}); n > 144 {
		t.Errorf("Scope is %d bytes, want at most 144", n)
	}
}

// A watched request allocates its watchSend: the Watch, with the record
// of a wait on it, included.
func TestWatchSendSize(t *testing.T) {
	if n := unsafe.Sizeof(watchSend{}); n > 288 {
		t.Errorf("watchSend is %d bytes, want at most 288", n)
	}
}
