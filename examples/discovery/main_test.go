package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func runOK(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, args, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	if !strings.Contains(s, "\nall checks passed\n") || !strings.HasSuffix(s, "\nOK\n") || strings.Contains(s, "FAILED") || strings.Count(s, "check:") != 4 {
		t.Fatalf("run:\n%s", s)
	}
	return s
}

func TestOnFake(t *testing.T) { runOK(t) }

func TestOnRealServer(t *testing.T) {
	runOK(t, extest.RealServer(t)...)
}

func TestBadFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-nope"}, &out); err == nil {
		t.Fatal("an unknown flag was accepted")
	}
	if err := run(context.Background(), []string{"extra"}, &out); err == nil {
		t.Fatal("an argument was accepted")
	}
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run)
}
