# zkflow: make test installs what the tests need (a Java runtime and Debian's
# zookeeper package for the real-server tests) when missing, then runs vet
# and every test under the race detector.

GO ?= go

.PHONY: test deps vet unit bench

test: deps vet unit

deps:
	./.ci/install-deps

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

unit:
	ZK_REQUIRED=1 $(GO) test -race -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
