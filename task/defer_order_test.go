package task

import (
	"slices"
	"testing"
)

// Defer's doc: cleanups run last-registered first, and the function Defer
// returns withdraws its own cleanup alone (the first, kept in the scope,
// and the later ones, kept beside it), until the scope closes; after, it
// does nothing.
func TestDeferOrderAndWithdraw(t *testing.T) {
	for _, off := range [][]int{nil, {0}, {1}, {3}, {0, 2}, {0, 1, 2, 3}} {
		rt, root := newStubRoot()
		c := root.Child()
		var ran []int
		var undo []func()
		for i := range 4 {
			undo = append(undo, c.Defer(Task[Unit](func(_ *Scope, k Cont[Unit]) {
				ran = append(ran, i)
				k(Unit{}, nil)
			})))
		}
		for _, i := range off {
			undo[i]()
		}
		c.Close()
		for _, u := range undo {
			u() // closed: does nothing
		}
		rt.drain()
		var want []int
		for i := 3; i >= 0; i-- {
			if !slices.Contains(off, i) {
				want = append(want, i)
			}
		}
		if !slices.Equal(ran, want) {
			t.Errorf("withdrawn %v: cleanups ran %v, want %v", off, ran, want)
		}
	}
}
