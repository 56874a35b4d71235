# zkflow: make test installs what the tests need (a Java runtime and Debian's
# zookeeper package for the real-server tests) when missing, then runs vet
# and every test under the race detector.

GO ?= go
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

.PHONY: test deps vet unit fidelity bench

test: deps vet unit fidelity

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

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
