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
//   - executor.Await, executor.AwaitAcrossExpiry, Executor.Run, the
//     operations' blocking faces (Executor.Get, Set, Create, Delete,
//     Children, Exists, Multi, Sync: executor.Await of the operation's
//     task), every other exported function or method of package executor
//     whose first parameter is a context.Context (but
//     Executor.CloseWhenDone, which only records its context), and every
//     function or method of a package under github.com/zkflow/zkflow/recipes
//     whose first parameter is a context.Context (the recipes' blocking
//     faces);
//   - a go statement (or sync.WaitGroup.Go) whose goroutine uses the
//     body's state, in its function's captures or in an argument that
//     shares memory (a pointer, slice, map, channel, function or
//     interface): a variable declared in the body, or one the body
//     captures from the function around it and changes, in the body or
//     the goroutine (assigns to it or through it: a field, an element,
//     what it points to; increments it, takes its address, or calls a
//     pointer method on it, a value; one it only reads, the executor or a
//     channel, say, is not its state). What the goroutine hands to
//     executor.Submit or SubmitWith as the continuation, and the function
//     literals of the task it submits, run on the executor, not in the
//     goroutine: a Task's goroutine that waits and hands its resume to
//     executor.Submit is allowed;
//   - a *task.F that leaves its body: stored in a variable declared
//     outside it or reached through a parameter, itself or in a value
//     that holds it (a closure that captures it; a struct, slice or map
//     that has it; a local variable given one of these; a field or element
//     of one whose type has a *task.F in it; a call given it whose
//     result's type has a *task.F in it), passed to a goroutine, or used
//     by a body that is not its own (any function literal whose first
//     parameter is a *task.F is a body of its own: a flow started inside
//     another, or held in a variable first, awaiting with the outer F).
//
// Each message says what is wrong and what to do instead, for instance
// "flow body receives from a channel: a flow suspends only at task.Await;
// wrap the wait in a Task (task.Suspend) and await it".
//
// # How deep it looks
//
// A body is a function literal (written in the call, or stored in a local
// variable that is given), or a function or method of the same package,
// given to task.Flow (or to any function of package task: a body is
// recognized as a function whose first parameter is a *task.F).
// The analyzer checks the body and every function literal in it (closures
// it calls, defers, or hands to combinators, which run on the executor
// too), and follows static calls to functions and methods
// declared in the same package, at any depth, naming the path in the
// message ("flow body (through claim → wait) receives from a channel").
// It does not follow calls into other packages, calls through function
// values or interfaces (other than the rules above), nor bodies that are
// not a function of the package or a literal stored in a local variable
// (a parameter, a field); the code inside a goroutine's function runs
// beside the flow and is not checked for blocking. It follows a *task.F
// through local variables, not through calls: a closure or an interface
// a call returns, a value a call stores it into, or a field of a func or
// interface type, is not seen to hold it, nor is a local variable that
// points to memory outside the body. A captured variable changed only
// outside the body, or only by a method called through it (a pointer) or
// a function it is passed to, is not seen as the body's state.
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
