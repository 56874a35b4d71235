package zkops

import (
	"fmt"
	"math"
	"testing"
)

// NewID and PutHex write what fmt's verbs they replace write.
func TestHexAsFmt(t *testing.T) {
	vs := []uint64{0, 1, 0xabc, 0xdeadbeef, math.MaxInt64, math.MaxUint64, 0x0123456789abcdef}
	for _, hi := range vs {
		for _, lo := range vs {
			want := fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", hi>>32, (hi>>16)&0xffff, hi&0xffff, lo>>48, lo&0xffffffffffff)
			if got := NewID(hi, lo); got != want {
				t.Errorf("NewID(%#x, %#x) = %q, want %q", hi, lo, got, want)
			}
			var b [32]byte
			PutHex(b[:16], hi)
			PutHex(b[16:], lo)
			if got, want := string(b[:]), fmt.Sprintf("%016x%016x", hi, lo); got != want {
				t.Errorf("PutHex(%#x, %#x) = %q, want %q", hi, lo, got, want)
			}
		}
	}
}
