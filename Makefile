# zkflow: make test installs what the tests need (a JDK, Debian's zookeeper
# package and Apache Curator's jars, for the real-server tests and the lock's
# interoperability test) when missing, then runs vet, every test under the
# race detector, fakezk's fidelity to the real server and the large
# simulation run.

GO ?= go
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

.PHONY: test deps vet unit fidelity bench sim

test: deps vet unit fidelity sim

deps:
	./.ci/install-deps

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

unit:
	ZK_REQUIRED=1 $(GO) test -race -count=1 ./...

# fakezk against a real ZooKeeper: the conformance cases and the random
# operation sequences, with their counts (the same tests unit ran, shown).
fidelity:
	ZK_REQUIRED=1 $(GO) test -count=1 -v -run 'TestConformance$$|TestDiff' ./zkadapter | grep -E '^(ok|FAIL|---)|conformance:|sequences' | grep -v -- '--- PASS: TestConformance/' | grep -v -- '--- SKIP'

# The large simulation run (fakezk/sim): every scenario that has a
# TestSimExplore replays its regression seeds (every seed that ever
# failed), then runs SIM_SEEDS seeds of a fixed range (1..SIM_SEEDS, the
# same every run) and SIM_SEEDS seeds of a range drawn from the commit
# under test (SIM_COMMIT, so each commit explores seeds no run has tried;
# outside a git checkout it is empty and the range falls back to a fixed
# offset, which the summary says); and the determinism sample of every
# TestSimDeterminism. Without -race (unit ran them all under -race with
# few seeds). simsum prints the totals, the seeds per second of each
# scenario and the regression seeds replayed, and fails below 60,000
# seeds, on any failure or mismatch, or if a fault class never fired.
# SIM_FROM=N replaces the drawn range's start.
SIM_SEEDS ?= 2600
SIM_COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
sim:
	SIM_SEEDS=$(SIM_SEEDS) SIM_COMMIT=$(SIM_COMMIT) $(GO) test -count=1 -timeout 30m -v -run '^(TestSimExplore|TestSimDeterminism)$$' ./fakezk/sim ./recipes/... | $(GO) run ./fakezk/sim/internal/simsum -min 60000

# The Go benchmarks of the hot paths, then the harness (bench/README.md):
# the main run on a server with its data on tmpfs and forceSync=no, and a
# second run with ZooKeeper's default settings (forceSync=yes, data on
# disk). Installs the server and the peers first when missing.
bench: bench-deps
	ZK_REQUIRED=1 $(GO) test -run '^$$' -bench . -benchmem ./...
	$(GO) run ./bench -readme bench/README.md -out bench/results
	$(GO) run ./bench -server-defaults -scenarios lock,cas,blocks -readme bench/README.md -out bench/results-defaults

.PHONY: bench-deps

# ZooKeeper, a JDK, Apache Curator and kazoo, for the harness and its peers.
bench-deps:
	BENCH_PEERS=1 ./.ci/install-deps
