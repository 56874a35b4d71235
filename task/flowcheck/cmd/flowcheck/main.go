// Command flowcheck reports what flow bodies may not do (see package
// github.com/zkflow/zkflow/task/flowcheck). Run it on a module with
//
//	go run github.com/zkflow/zkflow/task/flowcheck/cmd/flowcheck@latest ./...
//
// It exits with status 3 when it reports anything, 1 on an error (a
// package that does not build). Given a vet configuration file it runs as a
// go vet -vettool.
package main

import (
	"github.com/zkflow/zkflow/task/flowcheck"
	"golang.org/x/tools/go/analysis/singlechecker"
)

func main() { singlechecker.Main(flowcheck.Analyzer) }
