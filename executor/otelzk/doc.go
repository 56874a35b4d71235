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
// This package is the only one of the module that imports OpenTelemetry
// (go.opentelemetry.io/otel, /metric, /trace, v1.47.0). The module's
// go.mod lists it, so every user's module graph names it (and go.sum
// holds its hashes), but Go builds and links only the packages a program
// imports: a program that does not import otelzk compiles no
// OpenTelemetry code and its binary holds none. OpenTelemetry v1.47.0
// requires Go 1.26, which is why the module's go line says go 1.26.0.
//
// # Metrics
//
// Instrumentation scope ScopeName. Names follow the OpenTelemetry
// semantic conventions (v1.43.0 of the registry) where one fits:
//
//	db.client.operation.duration          histogram, s   every operation, from the executor's Send to its outcome
//	    db.system.name="zookeeper", db.operation.name (create, delete, exists, get, set,
//	    children, getACL, setACL, sync, multi), error.type when it failed,
//	    db.response.status_code (ZooKeeper's code, e.g. "-101") when the error has one
//	zkflow.operation.in_flight            updown counter  operations sent and not yet completed
//	zkflow.flow.duration                  histogram, s   submitted flows, start to outcome; error.type when failed
//	zkflow.flow.active                    updown counter  flows started and not yet ended
//	zookeeper.session.state               updown counter  executors whose session is in each state
//	    (zookeeper.session.state = connected, suspended, expired, closed)
//	zookeeper.session.transitions         counter        transitions applied, by zookeeper.session.state entered
//	zookeeper.session.suspended.duration  histogram, s   time suspended, by zookeeper.session.suspend.end
//	    = resumed, expired, closed
//	zkflow.retries                        counter        attempts after the first (combinators.Retry), by error.type
//	zkflow.executor.queue.depth           gauge          zkflow.queue = events, tasks (the task queue grows while suspended)
//	zookeeper.connection.events           counter        zookeeper.connection.event = attempt, handshake_failed,
//	    established, spill; server.address where the connection has one (zkadapter)
//	zookeeper.connection.spill.depth      gauge          requests waiting in zkadapter's spill queue
//	zkflow.lock.wait.duration             histogram, s   recipes/lock: from an acquire's start to holding the lock
//	zkflow.lock.hold.duration             histogram, s   recipes/lock: time held, by zkflow.outcome = released, lost
//	zkflow.leadership.changes             counter        recipes/election: zkflow.outcome = elected, resigned, lost
//	zkflow.leadership.duration            histogram, s   recipes/election: time a leadership lasted, by zkflow.outcome
//
// error.type is one of connection_loss, not_sent, session_expired,
// closed, deadline_exceeded, canceled, no_node, node_exists, bad_version,
// not_empty, no_children_for_ephemerals, no_auth, bad_arguments,
// invalid_acl, unimplemented, runtime_inconsistency, invalid_path,
// data_too_large, invalid_argument, code_N for another server code, and
// _OTHER (the conventions' fallback).
//
// The conventions register no db.system.name for ZooKeeper; "zookeeper"
// is the system's name in lower case, as they ask. The node path is not a
// metric attribute (its cardinality is the user's data); it is on spans.
//
// The lock and leadership metrics come from what those recipes report
// (task.RecipeEvent, through the same Observer): the hook sees operations,
// the recipes say what they mean. They count this process's locks and
// candidates only.
//
// # Traces
//
// A span "zkflow.flow" (kind internal, attributes zkflow.flow.id and
// zookeeper.session.id; status Error with error.type when the flow
// failed, and an event "retry" per retry with zkflow.retry.attempt,
// error.type and zkflow.retry.wait in seconds) per flow submitted to the
// executor, and under it one span per operation named after
// db.operation.name (kind client, attributes db.system.name,
// db.operation.name, zookeeper.path, zookeeper.session.id; on failure
// status Error, error.type and db.response.status_code). Flow spans are
// roots: Submit takes no context to carry a parent. Operations of flows
// started with task.Go (forks, deferred cleanups) are root spans of their
// own.
package otelzk
