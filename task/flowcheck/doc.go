// Package flowcheck is a vet analyzer that reports what a flow body may
// not do.
//
// A flow's body (the function given to task.Flow) runs as a coroutine in
// lockstep with its executor: the executor goroutine waits while the body
// runs, and the body suspends only at task.Await. That is what lets it use
// its state without locks and replay the same history under the
// simulation. A body that blocks anywhere else holds the executor (no
// other flow, timer or reply is handled meanwhile, and a wait for the
// executor itself never ends); a goroutine that touches its state races
// with it; a wall-clock wait escapes the simulation's clock. The analyzer
// finds these where they are cheap to fix, in the source:
//
//   - a channel receive, send or range, and a select without a default
//     case (a select with a default never blocks and is allowed);
//   - time.Sleep, After, Tick, NewTimer, NewTicker, AfterFunc, and a wait
//     on a context's Done channel;
//   - sync.Mutex.Lock, RWMutex.Lock and RLock, Locker.Lock, WaitGroup.Wait,
//     Cond.Wait;
//   - executor.Await, executor.AwaitAcrossExpiry, Executor.Run, and every
//     function or method of a package under
//     github.com/zkflow/zkflow/recipes whose first parameter is a
//     context.Context (the recipes' blocking faces);
//   - a go statement (or sync.WaitGroup.Go) whose goroutine uses a
//     variable of the body (a closure's captures; an argument that shares
//     memory: a pointer, slice, map, channel, function or interface);
//   - a *task.F that leaves its body: stored in a variable declared
//     outside it or reached through a parameter, passed to a goroutine, or
//     used by a body that is not its own (a flow started inside another
//     awaiting with the outer F).
//
// Each message says what is wrong and what to do instead, for instance
// "flow body receives from a channel: a flow suspends only at task.Await;
// wrap the wait in a Task (task.Suspend) and await it".
//
// # How deep it looks
//
// A body is a function literal, or a function or method of the same
// package, given to task.Flow (or to any function of package task: a
// body is recognized as a function whose first parameter is a *task.F).
// The analyzer checks the body and every function literal in it (closures
// it calls, defers, or hands to combinators, which run on the executor
// too), and follows static calls to functions and methods
// declared in the same package, at any depth, naming the path in the
// message ("flow body (through claim → wait) receives from a channel").
// It does not follow calls into other packages, calls through function
// values or interfaces (other than the rules above), nor bodies that are
// not a function of the package; the code inside a goroutine's function
// runs beside the flow and is not checked for blocking.
//
// A finding that is meant (a test of how the runtime refuses a blocking
// call, say) is silenced by a comment starting //flowcheck:allow, at the
// end of its line or alone on the line above; say why after it.
//
// # Running it
//
// On your own module:
//
//	go run github.com/zkflow/zkflow/task/flowcheck/cmd/flowcheck@latest ./...
//
// (flowcheck is a module of its own, so that golang.org/x/tools is in no
// graph but its users'.) It fails when it reports anything (the command
// exits with status 3, which go run passes on as a failure); make vet runs
// it over every module of this repository. It checks test files too. The
// command is also a go vet tool:
//
//	go install github.com/zkflow/zkflow/task/flowcheck/cmd/flowcheck@latest
//	go vet -vettool=$(go env GOPATH)/bin/flowcheck ./...
package flowcheck
