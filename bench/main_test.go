package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The emulated network's proxy is this binary started again.
	if ran, code := proxyMain(os.Stdin, os.Stdout, os.Stderr); ran {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}
