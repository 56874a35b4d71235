// Package otelzk turns the runtime's task.Observer into OpenTelemetry
// metrics and traces: the latency and outcome of every ZooKeeper operation,
// session states and the time spent suspended, retries, flows, queue
// depths and connection facts, and a span per flow with a child span per
// operation.
//
//	obs, err := otelzk.New(otelzk.Config{MeterProvider: mp, TracerProvider: tp})
//	conn, err := zkadapter.Dial(ctx, zkadapter.Config{Servers: servers, Observer: obs})
//	ex, err := executor.New(executor.Config{Conn: conn, Observer: obs})
//
// It guarantees what task.Observer does (every operation measured once, a
// flow's span started before its operations' and ended with its outcome)
// and adds no goroutine: it records on the goroutine that makes each
// callback (task.Observer says which), through the OpenTelemetry API,
// which is safe for concurrent use. Attribute sets of the hot paths
// (operation name and outcome) are made once and kept. Times are the
// executor's clock's: on fakezk's simulated clock, spans and durations
// are simulated time.
//
// # The dependency
//
// This package is a module of its own (go get
// github.com/zkflow/zkflow/executor/otelzk), the only one that requires
// OpenTelemetry (go.opentelemetry.io/otel, /metric, /trace, v1.47.0): a
// program that uses zkflow without it has no OpenTelemetry in its module
// graph. OpenTelemetry v1.47.0 requires Go 1.26, which is why this
// module's go line says go 1.26.0.
//
// # Metrics and spans
//
// Instrumentation scope ScopeName; names follow the OpenTelemetry
// semantic conventions where one fits: db.client.operation.duration for
// every operation (by db.operation.name and error.type), flow durations
// and counts, session states, transitions and time suspended, retries,
// queue depths, connection events, and lock and leadership durations
// reported by recipes/lock and recipes/election. The node path is not a
// metric attribute (its cardinality is the user's data); it is on spans.
// A span per submitted flow ("zkflow.flow", a root: Submit takes no
// context) with a child span per operation.
//
// Every metric and span with its attributes: executor/otelzk/METRICS.md.
package otelzk
