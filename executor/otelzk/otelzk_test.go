package otelzk_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/executor/otelzk"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type rig struct {
	clk    *fakezk.Clock
	srv    *fakezk.Server
	conn   *fakezk.Conn
	ex     *executor.Executor
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
}

func newRig(t *testing.T) *rig {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	obs, err := otelzk.New(otelzk.Config{MeterProvider: mp, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	clk := fakezk.NewClock(time.Time{})
	srv := fakezk.New(fakezk.Config{Seed: 1, Clock: clk, Deterministic: true})
	conn := srv.Connect(fakezk.ConnConfig{Timeout: 4 * time.Second, Observer: obs})
	ex, err := executor.New(executor.Config{Conn: conn, Clock: clk, Seed: 1, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ex.Shutdown)
	r := &rig{clk: clk, srv: srv, conn: conn, ex: ex, reader: reader, spans: spans}
	r.drive()
	return r
}

func (r *rig) drive() {
	for {
		for r.ex.RunUntilIdle()+r.srv.RunUntilIdle() > 0 {
		}
		if !r.clk.AdvanceToNext() {
			return
		}
	}
}

func (r *rig) collect(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelzk.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

func attrs(s attribute.Set) string {
	var kv []string
	for _, a := range s.ToSlice() {
		kv = append(kv, fmt.Sprintf("%s=%s", a.Key, a.Value.Emit()))
	}
	slices.Sort(kv)
	return fmt.Sprint(kv)
}

// histogram returns count and sum per attribute set of a float histogram.
func histogram(t *testing.T, m metricdata.Metrics) map[string][2]float64 {
	t.Helper()
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is a %T", m.Name, m.Data)
	}
	out := map[string][2]float64{}
	for _, dp := range h.DataPoints {
		out[attrs(dp.Attributes)] = [2]float64{float64(dp.Count), dp.Sum}
	}
	return out
}

func sums(t *testing.T, m metricdata.Metrics) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			out[attrs(dp.Attributes)] = dp.Value
		}
	case metricdata.Gauge[int64]:
		for _, dp := range d.DataPoints {
			out[attrs(dp.Attributes)] = dp.Value
		}
	default:
		t.Fatalf("%s is a %T", m.Name, m.Data)
	}
	return out
}

// A flow of three operations: one span for the flow with a child span per
// operation, each with the conventions' attributes and the executor's
// clock's times; db.client.operation.duration counts each operation under
// its name and outcome, with the latency the server's delay made.
func TestOperationsAndSpans(t *testing.T) {
	r := newRig(t)
	chain := c.Then(task.Create("/a", nil, task.Persistent), func(string) task.Task[task.Data] {
		return c.Then(task.Get("/a"), func(task.Data) task.Task[task.Data] { return task.Get("/missing") })
	})
	var err error
	executor.Submit(r.ex, chain, func(_ task.Data, e error) { err = e })
	r.srv.Delay(r.conn, 100*time.Millisecond)
	r.drive()
	if !errors.Is(err, task.ErrNoNode) {
		t.Fatalf("flow: %v", err)
	}

	ms := r.collect(t)
	got := histogram(t, ms["db.client.operation.duration"])
	want := map[string][2]float64{
		"[db.operation.name=create db.system.name=zookeeper]":                                              {1, 0.1},
		"[db.operation.name=get db.system.name=zookeeper]":                                                 {1, 0},
		"[db.operation.name=get db.response.status_code=-101 db.system.name=zookeeper error.type=no_node]": {1, 0},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("db.client.operation.duration:\n%v\nwant\n%v", got, want)
	}
	if u := ms["db.client.operation.duration"].Unit; u != "s" {
		t.Errorf("unit %q", u)
	}
	flows := histogram(t, ms["zkflow.flow.duration"])
	if fl := flows["[error.type=no_node]"]; fl[0] != 1 || fl[1] != 0.1 {
		t.Errorf("zkflow.flow.duration: %v", flows)
	}
	if a := sums(t, ms["zkflow.flow.active"]); a["[]"] != 0 {
		t.Errorf("active flows %v, want 0 after the flow ended", a)
	}
	if a := sums(t, ms["zkflow.operation.in_flight"]); a["[]"] != 0 {
		t.Errorf("operations in flight %v, want 0", a)
	}

	ended := r.spans.Ended()
	if len(ended) != 4 {
		t.Fatalf("%d spans, want a flow and three operations", len(ended))
	}
	var flow sdktrace.ReadOnlySpan
	for _, s := range ended {
		if s.Name() == "zkflow.flow" {
			flow = s
		}
	}
	if flow == nil {
		t.Fatal("no flow span")
	}
	if flow.Status().Code != codes.Error || flow.EndTime().Sub(flow.StartTime()) != 100*time.Millisecond {
		t.Errorf("flow span: status %v, %v long", flow.Status(), flow.EndTime().Sub(flow.StartTime()))
	}
	var ops []string
	for _, s := range ended {
		if s == flow {
			continue
		}
		if s.Parent().SpanID() != flow.SpanContext().SpanID() || s.SpanContext().TraceID() != flow.SpanContext().TraceID() {
			t.Errorf("span %s is not a child of the flow's", s.Name())
		}
		ops = append(ops, fmt.Sprintf("%s %v %s %v", s.Name(), s.SpanKind(), attrs(attribute.NewSet(s.Attributes()...)), s.Status().Code))
	}
	sess := fmt.Sprintf("0x%x", r.conn.SessionID())
	wantOps := []string{
		"create client [db.operation.name=create db.system.name=zookeeper zookeeper.path=/a zookeeper.session.id=" + sess + "] Unset",
		"get client [db.operation.name=get db.system.name=zookeeper zookeeper.path=/a zookeeper.session.id=" + sess + "] Unset",
		"get client [db.operation.name=get db.response.status_code=-101 db.system.name=zookeeper error.type=no_node zookeeper.path=/missing zookeeper.session.id=" + sess + "] Error",
	}
	if !slices.Equal(ops, wantOps) {
		t.Errorf("operation spans:\n%q\nwant\n%q", ops, wantOps)
	}
}

// Session state, transitions and the time spent suspended; retries by the
// error retried; connection facts from fakezk; queue depths.
func TestSessionsRetriesConnections(t *testing.T) {
	r := newRig(t)
	r.srv.Partition(r.conn, 1500*time.Millisecond, false)
	r.drive()
	n := 0
	flaky := task.Task[int](func(s *task.Scope, k task.Cont[int]) {
		if n++; n < 3 {
			k(0, task.ErrConnectionLoss)
			return
		}
		k(n, nil)
	})
	executor.Submit(r.ex, c.Retry(flaky, c.Policy{Attempts: 5}), nil)
	r.drive()
	r.srv.Expire(r.conn)
	r.drive()

	ms := r.collect(t)
	state := sums(t, ms["zookeeper.session.state"])
	wantState := map[string]int64{
		"[zookeeper.session.state=connected]": 1, "[zookeeper.session.state=suspended]": 0, "[zookeeper.session.state=expired]": 0,
	}
	if fmt.Sprint(state) != fmt.Sprint(wantState) {
		t.Errorf("zookeeper.session.state: %v", state)
	}
	tr := sums(t, ms["zookeeper.session.transitions"])
	wantTr := map[string]int64{
		"[zookeeper.session.state=connected]": 3, "[zookeeper.session.state=suspended]": 2, "[zookeeper.session.state=expired]": 1,
	}
	if fmt.Sprint(tr) != fmt.Sprint(wantTr) {
		t.Errorf("zookeeper.session.transitions: %v, want %v", tr, wantTr)
	}
	susp := histogram(t, ms["zookeeper.session.suspended.duration"])
	if s := susp["[zookeeper.session.suspend.end=resumed]"]; s != [2]float64{1, 1.5} {
		t.Errorf("suspended: %v, want one resumed suspension of 1.5s", susp)
	}
	if _, ok := susp["[zookeeper.session.suspend.end=expired]"]; !ok {
		t.Errorf("suspended: %v, want the suspension that ended in expiry", susp)
	}
	if rt := sums(t, ms["zkflow.retries"]); rt["[error.type=connection_loss]"] != 2 {
		t.Errorf("zkflow.retries: %v, want 2 after connection loss", rt)
	}
	ce := sums(t, ms["zookeeper.connection.events"])
	if ce["[zookeeper.connection.event=established]"] != 3 || ce["[zookeeper.connection.event=attempt]"] < 2 {
		t.Errorf("zookeeper.connection.events: %v", ce)
	}
	if q := sums(t, ms["zkflow.executor.queue.depth"]); len(q) != 2 {
		t.Errorf("zkflow.executor.queue.depth: %v, want the events and tasks queues", q)
	}
}
