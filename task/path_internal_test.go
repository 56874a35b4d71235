package task

import "testing"

// validASCII, ValidatePath's fast path, accepts exactly the paths the full
// check accepts among those it is given (and says false for the rest): every
// string of up to five characters over an alphabet of separators, dots,
// letters, a control character, DEL and a non-ASCII rune, sequential or not.
func TestValidASCIIAgreesWithFullCheck(t *testing.T) {
	alphabet := []string{"/", ".", "a", "\x1f", "\x7f", "é", "\x00"}
	var walk func(p string, depth int)
	checked, fast := 0, 0
	walk = func(p string, depth int) {
		for _, seq := range []bool{false, true} {
			checked++
			got := validASCII(p, seq)
			full := validateFull(p, seq) == nil
			if got && !full {
				t.Errorf("validASCII(%q, %v) accepts a path the full check refuses", p, seq)
			}
			if got {
				fast++
			}
			if !got && full && isPrintableASCII(p) {
				t.Errorf("validASCII(%q, %v) refuses a valid printable ASCII path", p, seq)
			}
		}
		if depth == 0 {
			return
		}
		for _, c := range alphabet {
			walk(p+c, depth-1)
		}
	}
	walk("", 5)
	if fast == 0 || fast == checked {
		t.Fatalf("%d of %d paths took the fast path: the test compares nothing", fast, checked)
	}
}

func isPrintableASCII(p string) bool {
	for i := range len(p) {
		if p[i] < 0x20 || p[i] >= 0x7f {
			return false
		}
	}
	return true
}

// go test -run '^$' -bench ValidatePath ./task
func BenchmarkValidatePath(b *testing.B) {
	for _, c := range []struct {
		name, path string
		seq        bool
	}{{"ascii", "/queue/items/item-0000000042", false}, {"ascii-sequential", "/queue/items/item-", true}, {"utf8", "/queue/é/item-0000000042", false}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ValidatePath(c.path, c.seq) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}
