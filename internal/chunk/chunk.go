// Package chunk hands out values and short slices cut from larger
// allocations: one heap object per chunk rather than one per value, for
// the hot paths of the fake server and the simulation that make many
// small, short-lived values. Nothing is ever handed out twice: a chunk
// is freed once none of the values cut from it is referred to, so a
// long-lived value keeps its whole chunk (of size values) alive.
package chunk

// Of is the rest of the current chunk of T (its zero value is empty).
// Not safe for concurrent use: its owner's lock guards it.
type Of[T any] []T

// New returns a pointer to a zero T, cut from the current chunk, or from
// a new one of size values when the current one is used up.
func (c *Of[T]) New(size int) *T {
	if len(*c) == 0 {
		*c = make([]T, size)
	}
	p := &(*c)[0]
	*c = (*c)[1:]
	return p
}

// Cut returns n zero values (length and capacity n, so an append to them
// never reaches the next cut), from the current chunk, or from a new one
// of size values when fewer than n are left. n must be at most size.
func (c *Of[T]) Cut(n, size int) []T {
	if len(*c) < n {
		*c = make([]T, size)
	}
	s := (*c)[:n:n]
	*c = (*c)[n:]
	return s
}
