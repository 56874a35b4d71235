package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/zkflow/zkflow/internal/peers"
)

// A scenario is one kind of coordination work, measured for the library
// and, where they implement it, for the peers, with each number of clients
// in Clients. New scenarios (master-worker tasks/s once recipes/masterworker
// exists, config write-to-handler latency once recipes/config exists)
// register themselves in an init function with register; the runner, the
// report, the README and the plots pick them up.
type scenario struct {
	// Name is the -scenarios name and the peer programs' --scenario.
	Name string
	// Title and Unit label the report ("lock acquire+release",
	// "handoffs/s").
	Title, Unit string
	// Clients are the client counts to run (each a session of its own).
	Clients []int
	// Peers are the peers that run the same scenario (the same Name).
	Peers []peers.Kind
	// Baseline, if set, names another scenario whose peer figures this
	// one's targets compare against (IDs from blocks against Curator's
	// compare-and-set), for the same number of clients.
	Baseline string
	// Sim marks a scenario that needs no server.
	Sim bool
	// Run measures the library's side once.
	Run func(ctx context.Context, r runSpec) (measured, error)
	// Targets are the ratios ours/peer this scenario must reach.
	Targets []target
	// Group, if set, keeps the scenario out of "all": -scenarios names
	// the group (or the scenario) to run it, and its results go to the
	// README section of that name unless -section says otherwise.
	Group string
	// Share, if set, names what Result.Holds counts out of Result.Total
	// ("tries won"); the report gives the share for each implementation.
	Share string
}

// target is a goal: the median ratio ours/Peer over the pairs, at every
// client count, at least Min. Peer's figures come from scenario From
// (empty: the scenario itself).
type target struct {
	Peer peers.Kind
	Min  float64
	From string
}

var registry []*scenario

func register(s *scenario) {
	if lookup(s.Name) != nil {
		panic("bench: scenario " + s.Name + " registered twice")
	}
	registry = append(registry, s)
}

func lookup(name string) *scenario {
	for _, s := range registry {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// selectScenarios parses the -scenarios flag: a comma-separated list of
// scenario names, group names (every scenario of the group) and "all"
// (every scenario of no group).
func selectScenarios(list string) ([]*scenario, error) {
	if list == "" {
		list = "all"
	}
	var out []*scenario
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		var picked []*scenario
		for _, r := range registry {
			if r.Name == name || r.Group == name || (name == "all" && r.Group == "") {
				picked = append(picked, r)
			}
		}
		if len(picked) == 0 {
			var names []string
			for _, r := range registry {
				names = append(names, r.Name)
			}
			return nil, fmt.Errorf("unknown scenario %q (have all, recipes, %s)", name, strings.Join(names, ", "))
		}
		for _, s := range picked {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// group is the group every scenario of scens belongs to ("" if none or
// mixed).
func group(scens []*scenario) string {
	if len(scens) == 0 {
		return ""
	}
	g := scens[0].Group
	for _, s := range scens {
		if s.Group != g {
			return ""
		}
	}
	return g
}

// withClients returns scens with the client counts of those that vary
// them (more than one count) replaced by counts, when counts is not empty.
// The registry is not changed.
func withClients(scens []*scenario, counts []int) []*scenario {
	if len(counts) == 0 {
		return scens
	}
	out := make([]*scenario, len(scens))
	for i, s := range scens {
		if len(s.Clients) > 1 {
			c := *s
			c.Clients = counts
			s = &c
		}
		out[i] = s
	}
	return out
}

var allPeers = []peers.Kind{peers.Curator, peers.Kazoo, peers.GoZK}

func init() {
	register(&scenario{
		Name: "lock", Title: "lock acquire+release (recipes/lock Mutex)", Unit: "handoffs/s",
		Clients: []int{1, 4, 16, 64}, Peers: allPeers, Run: lockRun,
		Targets: []target{{Peer: peers.Curator, Min: 1.5}, {Peer: peers.Kazoo, Min: 2}},
	})
	register(&scenario{
		Name: "cas", Title: "sequence IDs by compare-and-set (recipes/seqid.Next)", Unit: "IDs/s",
		Clients: []int{1, 4, 16, 64}, Peers: allPeers, Run: idRun(1),
		Targets: []target{{Peer: peers.Curator, Min: 1.5}, {Peer: peers.Kazoo, Min: 2}},
	})
	register(&scenario{
		Name: "blocks", Title: "IDs from blocks of 1000 (recipes/seqid Generator, Allocator)", Unit: "IDs/s",
		Clients: []int{1, 4, 16}, Run: idRun(1000), Baseline: "cas",
		Targets: []target{{Peer: peers.Curator, Min: 1000, From: "cas"}},
	})
	register(&scenario{
		Name: "pipeline", Title: "pipelined reads, 64 outstanding on one session (task.Get through the executor)", Unit: "reads/s",
		Clients: []int{1}, Peers: []peers.Kind{peers.GoZK}, Run: pipelineRun,
		Targets: []target{{Peer: peers.GoZK, Min: 0.9}},
	})
	register(&scenario{
		Name: "sim", Title: "simulated seeds (fakezk/sim scenario runner: 4 clients, lock + fenced writes + CAS ID for 5s of simulated time under the seed's faults, then recovery and invariants)", Unit: "seeds/s",
		Clients: []int{4}, Sim: true, Run: simRun,
	})
}
