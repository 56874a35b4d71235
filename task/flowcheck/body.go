package flowcheck

import (
	"go/ast"
	"go/token"
	"go/types"
)

// body is one function whose code runs as (part of) a flow body: root is
// the FuncLit or FuncDecl whose parameters and locals are the flow's state
// there; via names the same-package functions called to get there.
type body struct {
	root ast.Node
	via  []string
}

// walk checks the statements of block, which belongs to root.
func (c *checker) walk(root ast.Node, block *ast.BlockStmt, via []string) {
	b := body{root: root, via: via}
	seenF := map[fUse]bool{}
	stores := map[*ast.Ident]bool{} // assigned to, not used: assign reports them
	// fRoot is the body whose F the code being visited may use: root, or
	// a function literal in it whose first parameter is a *task.F (a body
	// of its own, held in a variable, say, before it is given to a Flow).
	fRoot := root
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			if n != fRoot && c.isBody(n) {
				outer := fRoot
				fRoot = n
				ast.Inspect(n.Body, visit)
				fRoot = outer
				return false
			}
		case *ast.SelectStmt:
			c.selectStmt(b, n, visit)
			return false
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				c.receive(b, n)
			}
		case *ast.SendStmt:
			c.report(b, n.Pos(), "sends on a channel", "a flow suspends only at task.Await; use a select with a default case, or hand the value over in a Task")
		case *ast.RangeStmt:
			if _, ok := c.typeOf(n.X).Underlying().(*types.Chan); ok {
				c.report(b, n.Pos(), "ranges over a channel", "a flow suspends only at task.Await; wrap each wait in a Task and await it in a loop")
			}
		case *ast.GoStmt:
			c.goroutine(b, n, "a goroutine", n.Call.Fun, n.Call.Args)
			// The goroutine's own code runs beside the flow, not in it;
			// its arguments are evaluated in the body.
			for _, a := range n.Call.Args {
				ast.Inspect(a, visit)
			}
			if _, lit := ast.Unparen(n.Call.Fun).(*ast.FuncLit); !lit {
				ast.Inspect(n.Call.Fun, visit)
			}
			return false
		case *ast.AssignStmt:
			c.assign(b, n)
			for _, l := range n.Lhs {
				if id, ok := ast.Unparen(l).(*ast.Ident); ok {
					stores[id] = true
				}
			}
		case *ast.Ident:
			if !stores[n] {
				c.foreignF(b, fRoot, n, seenF)
			}
		case *ast.CallExpr:
			return c.call(b, n, visit)
		}
		return true
	}
	ast.Inspect(block, visit)
}

// call checks a call made in a flow body and follows calls to functions
// declared in this package. It returns whether to visit the call's parts.
func (c *checker) call(b body, call *ast.CallExpr, visit func(ast.Node) bool) bool {
	fn := c.callee(call)
	if fn == nil {
		return true
	}
	if c.startsFlow(call) {
		// A flow started in a flow body is a body of its own, checked as
		// such; the rest of the call belongs to this body.
		ast.Inspect(call.Fun, visit)
		for _, a := range call.Args {
			if _, lit := ast.Unparen(a).(*ast.FuncLit); !lit || !c.isBody(a) {
				ast.Inspect(a, visit)
			}
		}
		return false
	}
	if isWaitGroupGo(fn) && len(call.Args) == 1 {
		// As a go statement: the function runs beside the flow.
		c.goroutine(b, call, "a goroutine (sync.WaitGroup.Go)", call.Args[0], nil)
		ast.Inspect(call.Fun, visit)
		if _, lit := ast.Unparen(call.Args[0]).(*ast.FuncLit); !lit {
			ast.Inspect(call.Args[0], visit)
		}
		return false
	}
	if what, instead := forbiddenCall(fn); what != "" {
		c.report(b, call.Pos(), what, instead)
		return true
	}
	if fd := c.decls[fn]; fd != nil && !c.walked[fd] {
		c.walked[fd] = true
		via := append(append([]string(nil), b.via...), funcName(fn))
		c.walk(fd, fd.Body, via)
	}
	return true
}

// selectStmt reports a select without a default case (it blocks until a
// case is ready); a select with one never blocks. Either way the
// operations of its cases are not reported one by one, but what they
// evaluate and the cases' bodies are checked.
func (c *checker) selectStmt(b body, s *ast.SelectStmt, visit func(ast.Node) bool) {
	hasDefault := false
	for _, cl := range s.Body.List {
		if cl.(*ast.CommClause).Comm == nil {
			hasDefault = true
		}
	}
	if !hasDefault {
		c.report(b, s.Pos(), "blocks in a select without a default case", "a flow suspends only at task.Await; add a default case, or wait in a Task")
	}
	for _, cl := range s.Body.List {
		cc := cl.(*ast.CommClause)
		switch comm := cc.Comm.(type) {
		case *ast.SendStmt:
			ast.Inspect(comm.Chan, visit)
			ast.Inspect(comm.Value, visit)
		case *ast.ExprStmt:
			inspectRecvOperand(comm.X, visit)
		case *ast.AssignStmt:
			for _, r := range comm.Rhs {
				inspectRecvOperand(r, visit)
			}
		}
		for _, st := range cc.Body {
			ast.Inspect(st, visit)
		}
	}
}

func inspectRecvOperand(e ast.Expr, visit func(ast.Node) bool) {
	if u, ok := ast.Unparen(e).(*ast.UnaryExpr); ok && u.Op == token.ARROW {
		ast.Inspect(u.X, visit)
		return
	}
	ast.Inspect(e, visit)
}

// receive reports a receive. A receive from a time function's channel is
// reported once, as the call; from ctx.Done(), with its own advice.
func (c *checker) receive(b body, u *ast.UnaryExpr) {
	if call, ok := ast.Unparen(u.X).(*ast.CallExpr); ok {
		fn := c.callee(call)
		if what, _ := forbiddenCall(fn); what != "" {
			return
		}
		if fn != nil && fn.Name() == "Done" && fn.Pkg() != nil && fn.Pkg().Path() == "context" {
			c.report(b, u.Pos(), "waits on a context's Done channel", "a flow suspends only at task.Await; the flow's deadline or cancel already ends the Await it is suspended in (use combinators.Deadline or Timeout for a bound)")
			return
		}
	}
	c.report(b, u.Pos(), "receives from a channel", "a flow suspends only at task.Await; wrap the wait in a Task (task.Suspend) and await it")
}

// goroutine reports a goroutine started at g in a flow body (a go
// statement, sync.WaitGroup.Go) that uses the body's state, which the
// goroutine's function fun refers to, or that one of args shares (a
// pointer, slice, map, channel, function or interface; a copied value is
// not shared). The body's state is a variable declared in the body (its
// *task.F included), or one the body captures from the function around it
// and changes (writtenIn): one it only reads (the executor, a channel)
// holds the same value all along. What the goroutine hands to
// executor.Submit or SubmitWith as the continuation, and the function
// literals in the task it submits, run on the executor, not in the
// goroutine (a Task's goroutine hands its resume over this way).
func (c *checker) goroutine(b body, g ast.Node, what string, fun ast.Expr, args []ast.Expr) {
	var found types.Object
	isF := false
	written := c.writtenIn(b.root)
	// uses looks for the state e uses; skipLits leaves out the function
	// literals in it (they run on the executor).
	var uses func(e ast.Node, skipLits bool)
	uses = func(e ast.Node, skipLits bool) {
		ast.Inspect(e, func(n ast.Node) bool {
			if isF {
				return false
			}
			if _, ok := n.(*ast.FuncLit); ok && skipLits {
				return false
			}
			if call, ok := n.(*ast.CallExpr); ok && c.submits(call) {
				uses(call.Fun, skipLits)
				last := len(call.Args) - 1
				for i, a := range call.Args {
					switch {
					case i == 0:
						uses(a, skipLits)
					case i == last && isIdentOrLit(a):
					default:
						uses(a, true)
					}
				}
				return false
			}
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			v, ok := c.pass.TypesInfo.Uses[id].(*types.Var)
			if !ok || !isLocal(v) || within(g, v.Pos()) {
				return true
			}
			if !within(b.root, v.Pos()) && !written[v] && !isFPtr(v.Type()) {
				return true // captured, never changed by the body
			}
			if isFPtr(v.Type()) {
				found, isF = v, true
			} else if found == nil {
				found = v
			}
			return true
		})
	}
	uses(fun, false)
	for _, a := range args {
		if c.mentionsF(a) || mayShare(c.typeOf(a), nil) {
			uses(a, false)
		}
	}
	switch {
	case isF:
		c.report(b, g.Pos(), "passes its *task.F ("+found.Name()+") to a goroutine", "an F is used only by its own body, on the executor; await a Task instead (combinators.Fork runs one beside the flow)")
	case found != nil:
		c.report(b, g.Pos(), "starts "+what+" that uses the flow's state ("+found.Name()+")", "the body runs on the executor and needs no locks only while nothing else touches its state; run the work as a Task (combinators.Fork, All) or start the goroutine outside the flow")
	}
}

// submits reports whether call is executor.Submit or SubmitWith.
func (c *checker) submits(call *ast.CallExpr) bool {
	fn := c.callee(call)
	return fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == executorPath && recvName(fn) == "" &&
		(fn.Name() == "Submit" || fn.Name() == "SubmitWith")
}

func isIdentOrLit(e ast.Expr) bool {
	switch ast.Unparen(e).(type) {
	case *ast.Ident, *ast.FuncLit:
		return true
	}
	return false
}

// mayShare reports whether a value of type t can refer to memory the
// body's variables also reach: a copied number, string or struct of them
// cannot.
func mayShare(t types.Type, seen map[types.Type]bool) bool {
	if seen[t] {
		return false
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return u.Kind() == types.UnsafePointer
	case *types.Array:
		return mayShare(u.Elem(), seen)
	case *types.Struct:
		if seen == nil {
			seen = map[types.Type]bool{}
		}
		seen[t] = true
		for i := range u.NumFields() {
			if mayShare(u.Field(i).Type(), seen) {
				return true
			}
		}
		return false
	}
	return true
}

// assign reports a *task.F, or a value that holds one (holdsF: a closure
// that captures it, a struct that has it, a local variable given one of
// these), stored in a variable that outlives the body: declared outside
// it, or reached through a parameter (the body's own variables end with
// it).
func (c *checker) assign(b body, a *ast.AssignStmt) {
	if a.Tok != token.ASSIGN {
		return
	}
	for i, lhs := range a.Lhs {
		holdsF := isFPtr(c.typeOf(lhs))
		if !holdsF {
			switch {
			case len(a.Rhs) == len(a.Lhs):
				holdsF = c.holdsF(a.Rhs[i])
			case len(a.Rhs) == 1:
				holdsF = c.storeHoldsF(store{rhs: a.Rhs[0], res: i})
			}
		}
		if !holdsF {
			continue
		}
		root := rootIdent(lhs)
		if root == nil {
			c.report(b, lhs.Pos(), "stores its *task.F where it outlives the body", "an F is valid only inside its body; pass it down as an argument")
			continue
		}
		obj := c.pass.TypesInfo.ObjectOf(root)
		if obj == nil || (within(b.root, obj.Pos()) && !c.isParam(b.root, obj)) {
			continue
		}
		c.report(b, lhs.Pos(), "stores its *task.F in "+root.Name+", which outlives the body", "an F is valid only inside its body, while the flow runs; pass it down as an argument")
	}
}

// An fUse is a *task.F used in a body (fRoot in walk).
type fUse struct {
	body ast.Node
	v    types.Object
}

// foreignF reports the first use in each body of a *task.F declared
// outside it (another flow's, or one stored away). fRoot is the body the
// use is in: the flow body, or a function literal in it that is a body of
// its own.
func (c *checker) foreignF(b body, fRoot ast.Node, id *ast.Ident, seen map[fUse]bool) {
	v, ok := c.pass.TypesInfo.Uses[id].(*types.Var)
	if !ok || v.IsField() || !isFPtr(v.Type()) || within(fRoot, v.Pos()) || seen[fUse{fRoot, v}] {
		return
	}
	seen[fUse{fRoot, v}] = true
	c.report(b, id.Pos(), "uses "+id.Name+", a *task.F declared outside it", "a flow awaits only with the F its body was given; pass that one down")
}

func (c *checker) mentionsF(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if v, ok := c.pass.TypesInfo.Uses[id].(*types.Var); ok && isFPtr(v.Type()) {
				found = true
			}
		}
		return !found
	})
	return found
}

func (c *checker) isParam(root ast.Node, obj types.Object) bool {
	var ft *ast.FuncType
	var recv *ast.FieldList
	switch r := root.(type) {
	case *ast.FuncLit:
		ft = r.Type
	case *ast.FuncDecl:
		ft, recv = r.Type, r.Recv
	}
	for _, fl := range []*ast.FieldList{recv, ft.Params} {
		if fl != nil && within(fl, obj.Pos()) {
			return true
		}
	}
	return false
}
