package otelzk

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/zkflow/zkflow/task"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/zkflow/zkflow/executor/otelzk"

// Config says where the measurements go.
type Config struct {
	// MeterProvider makes the meter; nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// TracerProvider makes the tracer; nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
}

// Attribute keys of this package beside the semantic conventions'.
const (
	PathKey         = attribute.Key("zookeeper.path")
	SessionIDKey    = attribute.Key("zookeeper.session.id")
	SessionStateKey = attribute.Key("zookeeper.session.state")
	FlowIDKey       = attribute.Key("zkflow.flow.id")
	QueueKey        = attribute.Key("zkflow.queue")
	ConnEventKey    = attribute.Key("zookeeper.connection.event")
	SuspendEndKey   = attribute.Key("zookeeper.session.suspend.end")
	// OutcomeKey is the recipe event a lock or leadership metric counts:
	// "released" or "lost" (a lock's hold), "elected", "resigned" or
	// "lost" (a leadership).
	OutcomeKey = attribute.Key("zkflow.outcome")
)

// dbSystem is db.system.name: the conventions list no value for ZooKeeper,
// so the name of the system, lower case, as they ask for others.
var dbSystem = semconv.DBSystemNameKey.String("zookeeper")

// New returns the Observer to give executor.Config.Observer, and
// zkadapter.Config.Observer or fakezk.ConnConfig.Observer for the
// connection's facts. It fails only if the meter refuses an instrument.
func New(cfg Config) (*task.Observer, error) {
	mp, tp := cfg.MeterProvider, cfg.TracerProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	o := &observer{tracer: tp.Tracer(ScopeName), sets: map[setKey]attribute.Set{}}
	if err := o.instruments(mp.Meter(ScopeName)); err != nil {
		return nil, err
	}
	return &task.Observer{
		OnFlowStart: o.flowStart,
		OnFlowEnd:   o.flowEnd,
		OnOpStart:   o.opStart,
		OnOpEnd:     o.opEnd,
		OnSession:   o.session,
		OnRetry:     o.retry,
		OnQueues:    o.queues,
		OnConn:      o.conn,
		OnRecipe:    o.recipe,
	}, nil
}

type observer struct {
	tracer trace.Tracer

	opDuration   metric.Float64Histogram
	opInFlight   metric.Int64UpDownCounter
	flowDuration metric.Float64Histogram
	flowsActive  metric.Int64UpDownCounter
	sessState    metric.Int64UpDownCounter
	transitions  metric.Int64Counter
	suspended    metric.Float64Histogram
	retries      metric.Int64Counter
	queueDepth   metric.Int64Gauge
	connEvents   metric.Int64Counter
	spillDepth   metric.Int64Gauge
	lockWait     metric.Float64Histogram
	lockHold     metric.Float64Histogram
	leaderEvents metric.Int64Counter
	leaderTerm   metric.Float64Histogram

	mu   sync.Mutex
	sets map[setKey]attribute.Set // attribute sets made once
}

func (o *observer) instruments(m metric.Meter) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	// Boundaries for a coordination service: 100µs to 10s.
	buckets := metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
	o.opDuration, err = m.Float64Histogram("db.client.operation.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of database client operations."), buckets)
	add(err)
	o.opInFlight, err = m.Int64UpDownCounter("zkflow.operation.in_flight", metric.WithUnit("{operation}"),
		metric.WithDescription("ZooKeeper requests sent and not yet completed."))
	add(err)
	o.flowDuration, err = m.Float64Histogram("zkflow.flow.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of flows submitted to the executor, from start to outcome."), buckets)
	add(err)
	o.flowsActive, err = m.Int64UpDownCounter("zkflow.flow.active", metric.WithUnit("{flow}"),
		metric.WithDescription("Flows started and not yet ended."))
	add(err)
	o.sessState, err = m.Int64UpDownCounter("zookeeper.session.state", metric.WithUnit("{session}"),
		metric.WithDescription("Executors whose session is in each state."))
	add(err)
	o.transitions, err = m.Int64Counter("zookeeper.session.transitions", metric.WithUnit("{transition}"),
		metric.WithDescription("Session transitions the executor applied, by the state entered."))
	add(err)
	o.suspended, err = m.Float64Histogram("zookeeper.session.suspended.duration", metric.WithUnit("s"),
		metric.WithDescription("Time the session spent suspended, by how the suspension ended."), buckets)
	add(err)
	o.retries, err = m.Int64Counter("zkflow.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Attempts of retried tasks after the first, by the error retried."))
	add(err)
	o.queueDepth, err = m.Int64Gauge("zkflow.executor.queue.depth", metric.WithUnit("{job}"),
		metric.WithDescription("Length of the executor's event and task queues."))
	add(err)
	o.connEvents, err = m.Int64Counter("zookeeper.connection.events", metric.WithUnit("{event}"),
		metric.WithDescription("Connection attempts, failed handshakes, sessions established, spilled requests."))
	add(err)
	o.spillDepth, err = m.Int64Gauge("zookeeper.connection.spill.depth", metric.WithUnit("{request}"),
		metric.WithDescription("Requests waiting in the connection's spill queue."))
	add(err)
	o.lockWait, err = m.Float64Histogram("zkflow.lock.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from a lock acquire's start to holding the lock (recipes/lock)."), buckets)
	add(err)
	o.lockHold, err = m.Float64Histogram("zkflow.lock.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("Time a lock was held, by how it ended: released or lost (recipes/lock)."), buckets)
	add(err)
	o.leaderEvents, err = m.Int64Counter("zkflow.leadership.changes", metric.WithUnit("{change}"),
		metric.WithDescription("Leaderships won (elected) and ended, by this process's candidates (recipes/election)."))
	add(err)
	o.leaderTerm, err = m.Float64Histogram("zkflow.leadership.duration", metric.WithUnit("s"),
		metric.WithDescription("Time a leadership of this process lasted, by how it ended (recipes/election)."), buckets)
	add(err)
	return errors.Join(errs...)
}

// recipe records what a recipe reports: lock waits and holds, leaderships
// won and ended.
func (o *observer) recipe(ev task.RecipeEvent) {
	ctx := context.Background()
	outcome := func() attribute.Set {
		return o.set(setKey{kind: "recipe", a: ev.Kind, b: ev.Event}, func() attribute.Set {
			return attribute.NewSet(OutcomeKey.String(ev.Event))
		})
	}
	switch {
	case ev.Kind == "lock" && ev.Event == "acquired":
		o.lockWait.Record(ctx, ev.Wait.Seconds())
	case ev.Kind == "lock":
		o.lockHold.Record(ctx, ev.Held.Seconds(), metric.WithAttributeSet(outcome()))
	case ev.Kind == "leadership" && ev.Event == "elected":
		o.leaderEvents.Add(ctx, 1, metric.WithAttributeSet(outcome()))
	case ev.Kind == "leadership":
		set := outcome()
		o.leaderEvents.Add(ctx, 1, metric.WithAttributeSet(set))
		o.leaderTerm.Record(ctx, ev.Held.Seconds(), metric.WithAttributeSet(set))
	}
}

// setKey names an attribute set used on a hot path.
type setKey struct{ kind, a, b, c string }

// set returns the attribute set for k, made by mk the first time.
func (o *observer) set(k setKey, mk func() attribute.Set) attribute.Set {
	o.mu.Lock()
	s, ok := o.sets[k]
	if !ok {
		s = mk()
		o.sets[k] = s
	}
	o.mu.Unlock()
	return s
}

// flowTag is what OnFlowStart keeps for a flow.
type flowTag struct {
	ctx  context.Context
	span trace.Span
}

func (o *observer) flowStart(f task.FlowInfo) any {
	ctx, span := o.tracer.Start(context.Background(), "zkflow.flow",
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(f.Start),
		trace.WithAttributes(FlowIDKey.Int64(int64(f.ID)), SessionIDKey.String(sessionID(f.Session.ID))))
	o.flowsActive.Add(context.Background(), 1)
	return &flowTag{ctx: ctx, span: span}
}

func (o *observer) flowEnd(f task.FlowDone) {
	et := errorType(f.Err)
	ctx := context.Background()
	o.flowsActive.Add(ctx, -1)
	o.flowDuration.Record(ctx, f.End.Sub(f.Start).Seconds(), metric.WithAttributeSet(o.set(setKey{kind: "flow", a: et}, func() attribute.Set {
		if et == "" {
			return attribute.NewSet()
		}
		return attribute.NewSet(semconv.ErrorTypeKey.String(et))
	})))
	t, ok := f.Tag.(*flowTag)
	if !ok {
		return
	}
	if f.Err != nil {
		t.span.SetStatus(codes.Error, f.Err.Error())
		t.span.SetAttributes(semconv.ErrorTypeKey.String(et))
	}
	t.span.End(trace.WithTimestamp(f.End))
}

func (o *observer) opStart(op task.OpInfo) any {
	parent := context.Background()
	if op.Flow != nil {
		if t, ok := op.Flow.Tag.(*flowTag); ok {
			parent = t.ctx
		}
	}
	name := op.Req.OpName()
	o.opInFlight.Add(context.Background(), 1)
	_, span := o.tracer.Start(parent, name,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(op.Start),
		trace.WithAttributes(dbSystem, semconv.DBOperationNameKey.String(name),
			PathKey.String(op.Req.NodePath()), SessionIDKey.String(sessionID(op.Session))))
	return span
}

func (o *observer) opEnd(op task.OpDone) {
	name := op.Req.OpName()
	et := errorType(op.Err)
	code := ""
	if c, ok := task.CodeOf(op.Err); ok {
		code = strconv.Itoa(int(c))
	}
	ctx := context.Background()
	o.opInFlight.Add(ctx, -1)
	o.opDuration.Record(ctx, op.Latency().Seconds(), metric.WithAttributeSet(o.set(setKey{"op", name, et, code}, func() attribute.Set {
		kv := []attribute.KeyValue{dbSystem, semconv.DBOperationNameKey.String(name)}
		if et != "" {
			kv = append(kv, semconv.ErrorTypeKey.String(et))
		}
		if code != "" {
			kv = append(kv, semconv.DBResponseStatusCodeKey.String(code))
		}
		return attribute.NewSet(kv...)
	})))
	span, ok := op.Tag.(trace.Span)
	if !ok {
		return
	}
	if op.Err != nil {
		span.SetStatus(codes.Error, op.Err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String(et))
		if code != "" {
			span.SetAttributes(semconv.DBResponseStatusCodeKey.String(code))
		}
	}
	span.End(trace.WithTimestamp(op.End))
}

func (o *observer) session(s task.SessionChange) {
	ctx := context.Background()
	if s.From != task.StateConnecting { // every executor starts there, uncounted
		o.sessState.Add(ctx, -1, metric.WithAttributeSet(o.stateSet(s.From)))
	}
	o.sessState.Add(ctx, 1, metric.WithAttributeSet(o.stateSet(s.To)))
	o.transitions.Add(ctx, 1, metric.WithAttributeSet(o.stateSet(s.To)))
	if s.From == task.StateSuspended && s.To != task.StateSuspended {
		end := "resumed"
		switch s.To {
		case task.StateExpired:
			end = "expired"
		case task.StateClosed:
			end = "closed"
		}
		o.suspended.Record(ctx, s.At.Sub(s.Since).Seconds(), metric.WithAttributes(SuspendEndKey.String(end)))
	}
}

func (o *observer) stateSet(st task.State) attribute.Set {
	return o.set(setKey{kind: "state", a: st.String()}, func() attribute.Set {
		return attribute.NewSet(SessionStateKey.String(stateName(st)))
	})
}

func (o *observer) retry(r task.RetryInfo) {
	et := errorType(r.Err)
	o.retries.Add(context.Background(), 1, metric.WithAttributeSet(o.set(setKey{kind: "retry", a: et}, func() attribute.Set {
		return attribute.NewSet(semconv.ErrorTypeKey.String(et))
	})))
	if r.Flow != nil {
		if t, ok := r.Flow.Tag.(*flowTag); ok {
			t.span.AddEvent("retry", trace.WithAttributes(attribute.Int("zkflow.retry.attempt", r.Attempt),
				semconv.ErrorTypeKey.String(et), attribute.Float64("zkflow.retry.wait", r.Wait.Seconds())))
		}
	}
}

var (
	eventsQueue = attribute.NewSet(QueueKey.String("events"))
	tasksQueue  = attribute.NewSet(QueueKey.String("tasks"))
)

func (o *observer) queues(q task.QueueDepths) {
	ctx := context.Background()
	o.queueDepth.Record(ctx, int64(q.Events), metric.WithAttributeSet(eventsQueue))
	o.queueDepth.Record(ctx, int64(q.Tasks), metric.WithAttributeSet(tasksQueue))
}

func (o *observer) conn(ev task.ConnEvent) {
	ctx := context.Background()
	kind := ev.Kind.String()
	if ev.Kind == task.ConnSpill {
		o.spillDepth.Record(ctx, int64(ev.Depth))
	}
	o.connEvents.Add(ctx, 1, metric.WithAttributeSet(o.set(setKey{kind: "conn", a: kind, b: ev.Server}, func() attribute.Set {
		kv := []attribute.KeyValue{ConnEventKey.String(kind)}
		if ev.Server != "" {
			kv = append(kv, semconv.ServerAddressKey.String(ev.Server))
		}
		return attribute.NewSet(kv...)
	})))
}

func stateName(st task.State) string {
	switch st {
	case task.StateConnecting:
		return "connecting"
	case task.StateConnected:
		return "connected"
	case task.StateSuspended:
		return "suspended"
	case task.StateExpired:
		return "expired"
	case task.StateClosed:
		return "closed"
	}
	return "unknown"
}

func sessionID(id int64) string { return fmt.Sprintf("0x%x", id) }

// errorTypes names the errors error.type reports, in the order they are
// tried (errors.Is).
var errorTypes = []struct {
	err  error
	name string
}{
	{task.ErrConnectionLoss, "connection_loss"},
	{task.ErrNotSent, "not_sent"},
	{task.ErrSessionExpired, "session_expired"},
	{task.ErrClosed, "closed"},
	{task.ErrDeadlineExceeded, "deadline_exceeded"},
	{task.ErrCanceled, "canceled"},
	{task.ErrNoNode, "no_node"},
	{task.ErrNodeExists, "node_exists"},
	{task.ErrBadVersion, "bad_version"},
	{task.ErrNotEmpty, "not_empty"},
	{task.ErrNoChildrenForEphemerals, "no_children_for_ephemerals"},
	{task.ErrNoAuth, "no_auth"},
	{task.ErrBadArguments, "bad_arguments"},
	{task.ErrInvalidACL, "invalid_acl"},
	{task.ErrUnimplemented, "unimplemented"},
	{task.ErrRuntimeInconsistency, "runtime_inconsistency"},
	{task.ErrInvalidPath, "invalid_path"},
	{task.ErrDataTooLarge, "data_too_large"},
	{task.ErrInvalidArgument, "invalid_argument"},
}

// errorType is err's error.type: "" for nil, a name above, "code_N" for
// another server code, "_OTHER" (the conventions' fallback) otherwise.
func errorType(err error) string {
	if err == nil {
		return ""
	}
	for _, e := range errorTypes {
		if err == e.err {
			return e.name
		}
	}
	for _, e := range errorTypes {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	if c, ok := task.CodeOf(err); ok {
		return "code_" + strconv.Itoa(int(c))
	}
	return "_OTHER"
}
