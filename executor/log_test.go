package executor_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

// logRig is an executor on a deterministic fake whose Logger writes text
// records at level into buf.
func logRig(t *testing.T, level slog.Level, buf *bytes.Buffer) (*executor.Executor, *fakezk.Server, *fakezk.Conn) {
	t.Helper()
	clk := fakezk.NewClock(time.Time{})
	srv := fakezk.New(fakezk.Config{Seed: 1, Clock: clk, Deterministic: true})
	conn := srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second})
	l := slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	ex, err := executor.New(executor.Config{Conn: conn, Clock: clk, Seed: 1, Logger: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ex.Shutdown)
	for ex.RunUntilIdle()+srv.RunUntilIdle() > 0 {
	}
	return ex, srv, conn
}

// At Debug, the executor logs each operation's outcome with its
// operation, path and session, and session transitions with the session.
func TestLogDebug(t *testing.T) {
	var buf bytes.Buffer
	ex, srv, conn := logRig(t, slog.LevelDebug, &buf)
	executor.Submit(ex, task.Get("/missing"), func(task.Data, error) {})
	for ex.RunUntilIdle()+srv.RunUntilIdle() > 0 {
	}
	sess := fmt.Sprintf("session=0x%x", conn.SessionID())
	out := buf.String()
	for _, want := range []string{
		`level=DEBUG msg="zkflow: session" state=Connected ` + sess,
		`level=DEBUG msg="zkflow: operation" op=get path=/missing ` + sess + ` flow=1 latency=0s err="node does not exist"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// At the default level (Info) nothing is logged but the errors of
// detached flows, at Warn, with the session.
func TestLogQuietByDefault(t *testing.T) {
	var buf bytes.Buffer
	ex, srv, conn := logRig(t, slog.LevelInfo, &buf)
	executor.Submit(ex, task.Get("/missing"), func(task.Data, error) {})
	executor.Submit(ex, task.Fail[int](errors.New("boom")), nil) // detached: nobody waits
	for ex.RunUntilIdle()+srv.RunUntilIdle() > 0 {
	}
	want := fmt.Sprintf("level=WARN msg=\"zkflow: detached flow failed\" session=0x%x err=boom\n", conn.SessionID())
	if got := buf.String(); got != want {
		t.Fatalf("log:\n%q\nwant\n%q", got, want)
	}
}
