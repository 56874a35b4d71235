package main

import (
	"cmp"
	"fmt"
	"strings"
)

// describeNets says what the networks were, for the report's header.
func describeNets(nets []network) string {
	var out []string
	for _, n := range nets {
		switch n.Name {
		case loopback:
			out = append(out, "loopback: the clients dial the server")
		case emulated:
			out = append(out, fmt.Sprintf("emulated (%s): every client, the peers' included, dials a TCP proxy (internal/netproxy, a process of its own) that delays each direction by %v", n.Label(), n.Delay))
		}
	}
	return strings.Join(out, "; ")
}

// ran reports whether the run of (scen, n, impl) over net was made in
// some pair, failed or not.
func (r *report) ran(scen string, n int, impl, net string) bool {
	for _, x := range r.Samples {
		if x.Scenario == scen && x.Clients == n && x.Impl == impl && cmp.Or(x.Net, loopback) == net {
			return true
		}
	}
	return false
}

// relative is the median over the pairs of f of (scen, n, impl) divided by
// f of (scen, n, base), both over net in the same pair.
func (r *report) relative(scen string, n int, impl, base, net string, f func(sample) float64) float64 {
	return spreadOf(ratios(r.perPair(scen, n, impl, net, f), r.perPair(scen, n, base, net, f))).Median
}

// sideBySide writes the networks' figures side by side: per scenario,
// client count and implementation, for each network its throughput with
// the ratios to raw go-zookeeper's and to Curator's, and its CPU per
// operation with the ratio to raw go-zookeeper's (each ratio the median
// over the pairs of the ratio within a pair).
func (r *report) sideBySide(w func(string, ...any)) {
	if len(r.Nets) == 0 {
		return
	}
	var labels []string
	for _, net := range r.Nets {
		labels = append(labels, net.Label())
	}
	w("### Networks side by side\n\nMedians over the pairs, for %s. Next to each throughput: its ratio to raw go-zookeeper's (÷ gozk) and to Curator's (÷ curator) in the same pair over the same network; next to each CPU/op: its ratio to raw go-zookeeper's. The last column is the emulated network's throughput divided by loopback's, per pair. The emulated network is a proxy delaying each direction by the one-way delay named (see Method).\n\n", strings.Join(labels, " and "))
	head, rule := "| scenario | clients | impl |", "|---|---:|---|"
	for _, l := range labels {
		head += " " + l + " | ÷ gozk | ÷ curator | CPU/op | CPU ÷ gozk |"
		rule += "---:|---:|---:|---:|---:|"
	}
	// With both networks, the last column is the emulated network's
	// throughput over loopback's (with -delay 0: the proxy's own cost).
	both := len(r.Nets) == 2 && r.Nets[0].Name == loopback && r.Nets[1].Name == emulated
	if both {
		head += " " + labels[1] + " ÷ loopback |"
		rule += "---:|"
	}
	w("%s\n%s\n", head, rule)
	gozk, curator := "gozk", "curator"
	for _, s := range r.scenarios {
		if s.Sim || len(s.Peers) == 0 {
			continue
		}
		for _, n := range s.Clients {
			for _, impl := range r.impls(s) {
				w("| %s | %d | %s |", s.Name, n, impl)
				for _, net := range r.Nets {
					tp := spreadOf(r.perPair(s.Name, n, impl, net.Name, throughput)).Median
					cpu := spreadOf(r.perPair(s.Name, n, impl, net.Name, cpuPerOp)).Median
					w(" %s | %s | %s | %s | %s |", fig(tp),
						fix2(r.relative(s.Name, n, impl, gozk, net.Name, throughput)),
						fix2(r.relative(s.Name, n, impl, curator, net.Name, throughput)),
						us(cpu), fix2(r.relative(s.Name, n, impl, gozk, net.Name, cpuPerOp)))
				}
				if both {
					w(" %s |", fix2(spreadOf(ratios(r.perPair(s.Name, n, impl, emulated, throughput), r.perPair(s.Name, n, impl, loopback, throughput))).Median))
				}
				w("\n")
			}
		}
	}
	w("\n")
}
