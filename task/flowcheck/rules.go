package flowcheck

import (
	"go/types"
	"strings"
)

const (
	executorPath = "github.com/zkflow/zkflow/executor"
	recipesPath  = "github.com/zkflow/zkflow/recipes/"
)

// A callRule names a function (recv == "") or a method (recv is the name
// of its receiver's type, pointer or not) that a flow body may not call.
type callRule struct {
	pkg, recv, name string
	instead         string
}

const (
	suspendOnly = "a flow suspends only at task.Await"
	useClock    = suspendOnly + ", on the executor's clock (the wall clock breaks the simulation); await combinators.Sleep, or use combinators.Timeout"
	useSync     = suspendOnly + ", and its state needs no lock (only the executor runs it); share state with other goroutines through Tasks, or wrap the wait in a Task"
	useAwait    = "it waits for an executor to run a task, and this flow runs on one; use task.Await(f, t)"
)

var callRules = []callRule{
	{"time", "", "Sleep", useClock},
	{"time", "", "After", useClock},
	{"time", "", "Tick", useClock},
	{"time", "", "NewTimer", useClock},
	{"time", "", "NewTicker", useClock},
	{"time", "", "AfterFunc", "its function runs on another goroutine, by the wall clock; await combinators.Sleep, then do the work in the body"},
	{"sync", "WaitGroup", "Wait", useSync},
	{"sync", "Mutex", "Lock", useSync},
	{"sync", "RWMutex", "Lock", useSync},
	{"sync", "RWMutex", "RLock", useSync},
	{"sync", "Locker", "Lock", useSync},
	{"sync", "Cond", "Wait", useSync},
	{executorPath, "", "Await", useAwait},
	{executorPath, "", "AwaitAcrossExpiry", useAwait},
	{executorPath, "Executor", "Run", "it runs an executor on this goroutine until it stops, and this flow runs on an executor; submit work with task.Await(f, t)"},
	opRule("Get"),
	opRule("Set"),
	opRule("Create"),
	opRule("Delete"),
	opRule("Children"),
	opRule("Exists"),
	opRule("Multi"),
	opRule("Sync"),
}

// opRule is the rule for an operation's blocking face, Executor.<name>:
// executor.Await of task.<name>.
func opRule(name string) callRule {
	return callRule{executorPath, "Executor", name, "it waits for an executor to run task." + name + ", and this flow runs on one; use task.Await(f, task." + name + "(...))"}
}

// nonBlocking names the exported functions and methods of package executor
// that take a context first but do not wait (CloseWhenDone only records
// it, and is called on the executor goroutine).
var nonBlocking = map[string]bool{"Executor.CloseWhenDone": true}

// forbiddenCall says what calling fn does wrong in a flow body and what to
// do instead, or "", "" when fn may be called.
func forbiddenCall(fn *types.Func) (what, instead string) {
	if fn == nil || fn.Pkg() == nil {
		return "", ""
	}
	pkg := fn.Pkg().Path()
	recv := recvName(fn)
	for _, r := range callRules {
		if r.pkg == pkg && r.recv == recv && r.name == fn.Name() {
			return "calls " + displayName(fn), r.instead
		}
	}
	if strings.HasPrefix(pkg, recipesPath) && firstParamIsContext(fn) {
		return "calls " + displayName(fn) + ", a blocking recipe call", "a recipe call that takes a context blocks until it is done (most wait for an executor to run their task, and this flow runs on one); await the recipe's Task face with task.Await(f, t)"
	}
	if pkg == executorPath && fn.Exported() && firstParamIsContext(fn) && !nonBlocking[funcName(fn)] {
		return "calls " + displayName(fn) + ", a blocking executor call", "an executor function that takes a context blocks until it is done (it waits for an executor, and this flow runs on one); await a Task with task.Await(f, t)"
	}
	return "", ""
}

// recvName is the name of fn's receiver type, "" for a function.
func recvName(fn *types.Func) string {
	recv := fn.Type().(*types.Signature).Recv()
	if recv == nil {
		return ""
	}
	t := recv.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	switch t := t.(type) {
	case *types.Named:
		return t.Obj().Name()
	case *types.Alias:
		return t.Obj().Name()
	}
	return ""
}

// displayName is pkg.Func or pkg.Type.Method, with the package's name.
func displayName(fn *types.Func) string {
	if r := recvName(fn); r != "" {
		return fn.Pkg().Name() + "." + r + "." + fn.Name()
	}
	return fn.Pkg().Name() + "." + fn.Name()
}

func funcName(fn *types.Func) string {
	if r := recvName(fn); r != "" {
		return r + "." + fn.Name()
	}
	return fn.Name()
}

func firstParamIsContext(fn *types.Func) bool {
	params := fn.Type().(*types.Signature).Params()
	if params.Len() == 0 {
		return false
	}
	n, ok := types.Unalias(params.At(0).Type()).(*types.Named)
	return ok && n.Obj().Name() == "Context" && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "context"
}
