# zkflow: make test installs what the tests need (a JDK, Debian's zookeeper
# package and Apache Curator's jars, for the real-server tests and the lock's
# interoperability test) when missing, then runs vet, every test under the
# race detector, fakezk's fidelity to the real server and the large
# simulation run.

GO ?= go
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

.PHONY: test deps vet unit fidelity bench sim sim-pgo mutate fakezk

test: deps vet unit fidelity sim

deps:
	./.ci/install-deps

# The modules: the root and the nested ones (executor/otelzk,
# recipes/fence/boltstore, task/flowcheck, examples/metrics and
# examples/fence), each with its own go.mod so that a program importing the
# core and the recipes does not get OpenTelemetry, Prometheus, bbolt or
# golang.org/x/tools in its module graph (internal/modgraph checks it).
# Testdata modules are fixtures, not modules of the project.
MODULES := $(shell find . -name go.mod -not -path '*/testdata/*' -printf '%h\n' | sort)

# go vet ./... (in every module) also holds each go.mod's go line to what
# the code uses: its stdversion check reports any standard-library symbol
# newer than the go line (the compiler refuses newer language features).
# check-go-line keeps each module's line the oldest release that passes:
# the form go 1.N, no patch (or 1.N.0 when a requirement declares it), and
# vet at one release lower must fail. flowcheck (task/flowcheck, a module
# of its own: built there, run on every module) reports what a flow body
# may not do: block outside task.Await, wait on the wall clock, share its
# state with a goroutine; it fails on any finding.
vet:
	@for m in $(MODULES); do echo "vet $$m"; (cd $$m && $(GO) vet ./...) || exit 1; done
	@bin=$$(mktemp -d) && trap 'rm -rf "$$bin"' EXIT && \
		(cd task/flowcheck && $(GO) build -o "$$bin/flowcheck" ./cmd/flowcheck) && \
		for m in $(MODULES); do echo "flowcheck $$m"; (cd $$m && "$$bin/flowcheck" ./...) || exit 1; done
	@for m in $(MODULES); do GO=$(GO) ./.ci/check-go-line $$m || exit 1; done
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

# Every module's tests; a failing module does not stop the others.
# Four test binaries at once (go test -p; the default is one per core):
# many packages wait on real servers, the real clock or a JVM more than
# they compute, so two at a time left the cores half idle. zkadapter, the
# longest of them (real-server tests, about 3 minutes), is named first so
# that it starts first instead of running alone at the end. On the 2-core
# machine the root module's tests took 12.1 min at -p 2 and 9.5 min at
# -p 4 with zkadapter last, 13.5 CPU minutes either way
# (`time go test -race -count=1 -p N -json ./...`, idle machine).
# UNIT_SKIP: the tests make test runs in a later step without -race, so
# that unit does not run them twice or under the race detector for
# nothing: every TestSimDeterminism and every canary hunt (TestCanar*:
# the simulation catching each known bug switched back on), which make
# sim runs, and zkadapter's conformance cases and random sequences against
# the real server (fidelity). Under -race they took about 110, 197 and
# 56 s of the unit step's time on the 2-core machine; the canaries take
# about 30 s without it (the scenario code they run is also run under
# -race by each package's own simulation test). The memory tests
# (TestMemoryFlat*, internal/memcheck) go to make sim's step too: each
# drives one executor on the test goroutine, where the race detector has
# nothing to find, and under it they took about 220 CPU s of the unit
# step (10,000 cycles each); without it, at 20,000 cycles, about 30 s.
# make unit UNIT_SKIP= runs them all too.
UNIT_P ?= 4
UNIT_SKIP ?= ^(TestSimDeterminism|TestCanar.*|TestConformance|TestDiffRandomSequences|TestMemoryFlat.*)$$
unit:
	@st=0; for m in $(MODULES); do echo "test $$m"; first=; [ -d $$m/zkadapter ] && first=./zkadapter; \
		(cd $$m && ZK_REQUIRED=1 $(GO) test -race -count=1 -p $(UNIT_P) -skip '$(UNIT_SKIP)' $$first ./...) || st=1; done; exit $$st

# The fakezk command beside its launcher, so that
# fakezk/wire/cmd/fakezk/bin can be a suite's ZOOKEEPER_BIN_PATH
# (fakezk/wire/cmd/fakezk/README.md). Phony: fakezk/ is also a directory.
fakezk:
	$(GO) build -o fakezk/wire/cmd/fakezk/bin/fakezk ./fakezk/wire/cmd/fakezk

# fakezk against a real ZooKeeper: the conformance cases and the random
# operation sequences, with their counts (unit skips them: UNIT_SKIP).
fidelity:
	ZK_REQUIRED=1 $(GO) test -count=1 -v -run 'TestConformance$$|TestDiff' ./zkadapter | grep -E '^(ok|FAIL|---)|conformance:|sequences' | grep -v -- '--- PASS: TestConformance/' | grep -v -- '--- SKIP'

# The large simulation run (fakezk/sim): every scenario that has a
# TestSimExplore replays its regression seeds (every seed that ever
# failed), then runs SIM_SEEDS seeds of a fixed range (1..SIM_SEEDS, the
# same every run) and SIM_SEEDS seeds of a range drawn from the commit
# under test (SIM_COMMIT, so each commit explores seeds no run has tried;
# outside a git checkout it is empty and the range falls back to a fixed
# offset, which the summary says); the determinism sample of every
# TestSimDeterminism; every canary hunt (TestCanar*); and the memory
# tests (TestMemoryFlat*, of the recipes and the combinators), which need
# no race detector and whose binaries are built here anyway. Without -race
# (unit ran every package's own simulation test under -race with few
# seeds, and skipped these: UNIT_SKIP). simsum prints the totals, the
# seeds per second of each
# scenario (and per CPU second: on a shared machine the better measure),
# the regression seeds replayed and the seeds run under a chroot, and
# fails below 250,000 seeds (40 in-memory scenarios, 2 x SIM_SEEDS each), on any
# failure or mismatch, if a fault class never fired, or if no seed ran
# under a chroot or with the executors' sync after a reconnect.
# SIM_SEEDS=3500 gives about 282,500 seeds over 44 scenarios (40 in
# memory, idpersist/parent added; 275,528 over 43 on b7bc9f1 in 500 s of
# make sim and 17.4 min of make test; 3800 gave 283,707
# over 41 on 608b2d9, in 700 s of make sim and 21.9 min of make test at a
# slow hour), above the floor; on fb39187 make sim
# took 470 s elapsed alone and make test 13.5 min. On commit c780309 (idle 2-core
# machine) make sim took 381 s and 699 CPU s, within make test's
# 25-minute budget (the whole of make test took 16.6 min); b6da4ab's 17
# scenarios and 88,417 seeds took 224 s there the same day. The classes
# added since (lag, watched reads from a lagging member, restarts onto
# one, counter faults and operator writes in more scenarios) made a seed
# dearer: on 0998cc2, at 4000, make sim took 920 s and make test 29.6 min
# on this machine at a slow hour (the same code's speed varies by about
# 15 % from hour to hour here).
# SIM_FROM=N replaces the drawn range's start.
# The wire scenarios (internal/wiresim: the lock, the ID counter, the
# queue and leader election through zkadapter and go-zookeeper over TCP to
# a wire-served fake on the real clock, under seeded faults on the wire)
# run SIM_WIRE_SEEDS seeds of the same two ranges each, beside the
# in-memory packages; their SIM lines are summed with the others (fault
# classes named wire-*). Their seeds wait on the real clock, so they take
# wall time more than CPU: SIM_WIRE_SEEDS=300 (2400 seeds) took 136 s
# and 42 CPU s alone on the 2 cores under a load of 15
# (fakezk/sim/PROTOCOL.md, Through the wire).
# The run is built with profile-guided optimization (go help buildflag,
# -pgo): SIM_PGO, a CPU profile of the in-memory scenarios, lets the
# compiler inline and devirtualize the hot paths of the executor, the task
# package and fakezk as the simulation runs them. It changes the code's
# speed, not what it does. Measured on d064cdb (farm-bench A B A B, the 32
# in-memory scenarios at 40+40 seeds each, quiet machine): 0.91x the CPU
# without it, in two calls of 6 and 9 pairs. make sim-pgo records it
# again from the code of the day (a few minutes); a stale profile only
# gives back less of the gain.
SIM_SEEDS ?= 3500
SIM_WIRE_SEEDS ?= 300
SIM_COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
SIM_PGO ?= $(CURDIR)/fakezk/sim/testdata/sim.pgo
sim:
	SIM_SEEDS=$(SIM_SEEDS) SIM_WIRE_SEEDS=$(SIM_WIRE_SEEDS) SIM_COMMIT=$(SIM_COMMIT) $(GO) test -pgo=$(SIM_PGO) -count=1 -timeout 30m -v -run '^(TestSimExplore|TestSimDeterminism|TestCanar.*|TestMemoryFlat.*)$$' ./fakezk/sim ./recipes/... ./examples/lockflow ./examples/claim ./internal/wiresim ./combinators | $(GO) run ./fakezk/sim/internal/simsum -min 250000

# SIM_PGO recorded again: 200 seeds of every in-memory scenario, each
# package's CPU profile merged into one.
SIM_PKGS = $(shell grep -rl --include='*_test.go' '^func TestSimExplore[[:punct:]]' fakezk/sim recipes examples | xargs -n1 dirname | sort -u | sed 's|^|./|')
sim-pgo:
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	for p in $(SIM_PKGS); do n=$$(echo $$p | tr -c 'a-z0-9\n' _); \
		SIM_SEEDS=100 SIM_FROM=1000000 $(GO) test -count=1 -run '^TestSimExplore$$' -o "$$d/$$n.test" -cpuprofile "$$d/$$n.prof" $$p > /dev/null || exit 1; \
	done && $(GO) tool pprof -proto "$$d"/*.prof > $(SIM_PGO) && echo "wrote $(SIM_PGO)"

# The Go benchmarks of the hot paths, then the harness (bench/README.md):
# the main run on a server with its data on tmpfs and forceSync=no, and a
# second run with ZooKeeper's default settings (forceSync=yes, data on
# disk), each over loopback and the emulated network (0.5 ms each way);
# then the proxy's own cost (-delay 0, into bench/results-proxy); then the
# recipe scenarios against Curator's recipes (their own README section and
# bench/results-recipes); then the partitioner's rebalance against kazoo's
# SetPartitioner (its own section, bench/results-partition) and service
# discovery against Curator's ServiceProvider (bench/results-discovery). Installs
# the server and the peers first when missing.
bench: bench-deps
	ZK_REQUIRED=1 $(GO) test -run '^$$' -bench . -benchmem ./...
	$(GO) run ./bench -readme bench/README.md -out bench/results
	$(GO) run ./bench -server-defaults -scenarios lock,cas,blocks -readme bench/README.md -out bench/results-defaults
	$(GO) run ./bench -scenarios lock,cas -clients 1,4 -delay 0 -out bench/results-proxy
	$(GO) run ./bench -scenarios recipes -networks loopback -readme bench/README.md -out bench/results-recipes
	$(GO) run ./bench -scenarios partition -networks loopback -peers kazoo -readme bench/README.md -section partition -out bench/results-partition
	$(GO) run ./bench -scenarios discovery -networks loopback -peers curator -readme bench/README.md -section discovery -out bench/results-discovery

.PHONY: bench-deps

# ZooKeeper, a JDK, Apache Curator and kazoo, for the harness and its peers.
bench-deps:
	BENCH_PEERS=1 ./.ci/install-deps

# Mutation testing (not part of make test): Gremlins mutates one operator
# at a time in each package of MUTATE_PKGS and runs that package's own
# tests (without vet, so that only a test kills a mutant); a mutant the
# tests pass with LIVED: a behaviour no test checks. Every mutator is
# enabled. GOFLAGS=-count=1 makes Gremlins time an uncached test run;
# each mutant's timeout is that time times the coefficient after the
# package's colon (large for packages whose tests take less time than
# building them; a mutant that hangs TIMED OUT, counted apart from killed
# and lived). The JSON of each package goes to $(MUTATE_OUT)/<pkg>.json
# (gitignored); the summary prints per package the efficacy,
# killed/(killed+lived), and the mutant coverage,
# (killed+lived)/(killed+lived+not covered: no test of the package runs
# the line; Gremlins counts a mutant in a switch's case expression as not
# covered even when a test runs it). Needs jq. The packages are those whose
# tests take seconds: measured 5m46s on 2 idle cores, 10m29s with the
# cores busy with other work.
GREMLINS ?= github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
MUTATE_PKGS ?= ./executor:20 ./recipes/internal/zkops:40 ./recipes/config:20 ./recipes/seqid:4
MUTATE_OUT ?= mutate-out
MUTATORS := --invert-assignments --invert-bitwise --invert-bwassign --invert-logical --invert-loopctrl --remove-self-assignments
mutate:
	@mkdir -p $(MUTATE_OUT)
	@for pc in $(MUTATE_PKGS); do p=$${pc%:*}; n=$$(echo $${p#./} | tr / _); echo "== $$p"; \
		GOFLAGS='-count=1 -vet=off' $(GO) run $(GREMLINS) unleash $(MUTATORS) --workers 2 \
			--timeout-coefficient $${pc##*:} -S lt -o $(MUTATE_OUT)/$$n.json $$p || exit 1; \
	done
	@echo; printf '%-26s %9s %9s %6s %5s %8s %6s\n' package efficacy coverage killed lived timedout uncov
	@for pc in $(MUTATE_PKGS); do p=$${pc%:*}; n=$$(echo $${p#./} | tr / _); \
		jq -r --arg p "$$p" '[$$p, (.test_efficacy*10|round/10), (.mutations_coverage*10|round/10), .mutants_killed, .mutants_lived, ([.files[].mutations[]|select(.status=="TIMED OUT")]|length), .mutants_not_covered] | @tsv' $(MUTATE_OUT)/$$n.json; \
	done | awk -F'\t' '{printf "%-26s %8s%% %8s%% %6s %5s %8s %6s\n",$$1,$$2,$$3,$$4,$$5,$$6,$$7}'
