package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkflow/zkflow/examples/internal/extest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOnFake(t *testing.T) {
	for _, seed := range extest.Seeds {
		s := extest.Run(t, run, []string{"-seed", seed, "-listen", "127.0.0.1:0"},
			"counts moved since round 1", "zookeeper_session_transitions_total{expired}: 1",
			"zookeeper_session_state{connected}: 3 sessions")
		if seed == "1" {
			t.Log(s)
		}
	}
}

func TestOnRealServer(t *testing.T) {
	s := extest.Run(t, run, append(extest.RealServer(t), "-listen", "127.0.0.1:0"), "counts moved since round 1")
	if strings.Contains(s, "expired") {
		t.Fatalf("faults on a real server:\n%s", s)
	}
}

func TestBadFlags(t *testing.T) {
	extest.Refused(t, run, []string{"-clients", "0"}, []string{"-incs", "0"}, []string{"-serve", "-1s"},
		[]string{"extra"}, []string{"-nosuchflag"}, []string{"-listen", "127.0.0.1:-1"})
	extest.Refused(t, run, []string{"-zk", "127.0.0.1:1", "-timeout", "2s", "-listen", "127.0.0.1:0"})
	// A connect string that does not parse is refused before any dial.
	extest.RefusedConnectStrings(t, run, "-listen", "127.0.0.1:0")
}

// announcer is the example's output; it hands over the /metrics URL once
// the example says it is serving after its rounds.
type announcer struct {
	mu   sync.Mutex
	buf  strings.Builder
	url  chan string
	sent bool
}

var servingLine = regexp.MustCompile(`serving (http://\S+/metrics) for`)

func (a *announcer) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.buf.Write(p)
	if m := servingLine.FindStringSubmatch(a.buf.String()); m != nil && !a.sent {
		a.sent = true
		a.url <- m[1]
	}
	return len(p), nil
}

// A scrape from outside while the example serves: the exposition has the
// series with their types and labels.
func TestScrape(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &announcer{url: make(chan string, 1)}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-serve", "1h"}, out) }()
	var url string
	select {
	case url = <-out.url:
	case err := <-done:
		t.Fatalf("run ended before serving: %v\n%s", err, out.buf.String())
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	text := string(body)
	for _, want := range []string{
		"# TYPE db_client_operation_duration_seconds histogram",
		"# TYPE zkflow_retries_total counter",
		"# TYPE zookeeper_session_state gauge",
		"# TYPE zkflow_executor_queue_depth gauge",
		"# TYPE zookeeper_session_suspended_duration_seconds histogram",
		`db_client_operation_duration_seconds_bucket{db_operation_name="set",db_system_name="zookeeper",otel_scope_name="github.com/zkflow/zkflow/executor/otelzk",otel_scope_schema_url="",otel_scope_version="",le="0.0001"}`,
		`zkflow_retries_total{error_type="bad_version",otel_scope_name="github.com/zkflow/zkflow/executor/otelzk"`,
		`zookeeper_session_transitions_total{otel_scope_name="github.com/zkflow/zkflow/executor/otelzk",otel_scope_schema_url="",otel_scope_version="",zookeeper_session_state="expired"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", text)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if !strings.HasSuffix(out.buf.String(), "\nOK\n") {
		t.Fatalf("output:\n%s", out.buf.String())
	}
}
