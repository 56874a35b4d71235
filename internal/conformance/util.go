package conformance

import "slices"

func sorted(x []string) []string {
	x = slices.Clone(x)
	slices.Sort(x)
	if x == nil {
		x = []string{}
	}
	return x
}
