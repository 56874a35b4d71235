package netproxy

import "errors"

// Group is one proxy per target, in the targets' order: one per server of
// an ensemble, say, so that a test can partition server i with
// g[i].Silence() while the client is given g.Addrs().
type Group []*Proxy

// NewGroup starts a proxy for each target. If one fails, those already
// started are closed.
func NewGroup(targets ...string) (Group, error) {
	g := make(Group, 0, len(targets))
	for _, t := range targets {
		p, err := New(t)
		if err != nil {
			return nil, errors.Join(err, g.Close())
		}
		g = append(g, p)
	}
	return g, nil
}

// Addrs is the proxies' addresses, in the targets' order.
func (g Group) Addrs() []string {
	addrs := make([]string, len(g))
	for i, p := range g {
		addrs[i] = p.Addr()
	}
	return addrs
}

// Close closes every proxy and returns their errors joined.
func (g Group) Close() error {
	var errs []error
	for _, p := range g {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}
