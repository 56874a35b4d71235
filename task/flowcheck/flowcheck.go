package flowcheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// TaskPath is the import path of the package that defines Flow, Await and F.
const TaskPath = "github.com/zkflow/zkflow/task"

// Analyzer reports the constructs a flow body may not use. See the
// package doc for the list and for how deep it looks.
var Analyzer = &analysis.Analyzer{
	Name:     "flowcheck",
	Doc:      "report blocking calls, channel waits, wall-clock waits, goroutines and escaping *task.F in the bodies of task.Flow",
	URL:      "https://pkg.go.dev/github.com/zkflow/zkflow/task/flowcheck",
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      run,
}

// checker holds one package's state: its function declarations (to follow
// same-package calls) and what has been reported or walked already.
type checker struct {
	pass     *analysis.Pass
	decls    map[*types.Func]*ast.FuncDecl
	walked   map[*ast.FuncDecl]bool
	reported map[string]bool
	allowed  map[string]bool // "file:line" a //flowcheck:allow comment covers

	stores  []store                       // every store into a local variable
	holders map[*types.Var]bool           // local variables that may hold a *task.F
	lits    map[*types.Var][]*ast.FuncLit // function literals stored in a local variable
	litDone map[*ast.FuncLit]bool         // local-variable bodies walked
	written map[ast.Node]map[*types.Var]bool
}

// allowPrefix starts a comment that silences the findings on its line, or
// on the next line when it stands alone above it.
const allowPrefix = "//flowcheck:allow"

func run(pass *analysis.Pass) (any, error) {
	c := &checker{
		pass:     pass,
		decls:    map[*types.Func]*ast.FuncDecl{},
		walked:   map[*ast.FuncDecl]bool{},
		reported: map[string]bool{},
		allowed:  map[string]bool{},
		holders:  map[*types.Var]bool{},
		lits:     map[*types.Var][]*ast.FuncLit{},
		litDone:  map[*ast.FuncLit]bool{},
		written:  map[ast.Node]map[*types.Var]bool{},
	}
	for _, file := range pass.Files {
		for _, cg := range file.Comments {
			for _, cm := range cg.List {
				if strings.HasPrefix(cm.Text, allowPrefix) {
					p := pass.Fset.Position(cm.Slash)
					line := p.Line
					if c.standsAlone(p) {
						line++
					}
					c.allowed[fmt.Sprintf("%s:%d", p.Filename, line)] = true
				}
			}
		}
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if fn, ok := pass.TypesInfo.Defs[fd.Name].(*types.Func); ok {
					c.decls[fn] = fd
				}
			}
		}
	}
	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	c.collectStores(ins)
	ins.Preorder([]ast.Node{(*ast.CallExpr)(nil)}, func(n ast.Node) {
		call := n.(*ast.CallExpr)
		if !c.startsFlow(call) {
			return
		}
		for _, a := range call.Args {
			if !c.isBody(a) {
				continue
			}
			switch body := ast.Unparen(a).(type) {
			case *ast.FuncLit:
				c.walk(body, body.Body, nil)
			default:
				// A function literal held in a local variable.
				if id, ok := body.(*ast.Ident); ok {
					if v, ok := pass.TypesInfo.Uses[id].(*types.Var); ok {
						for _, lit := range c.lits[v] {
							if !c.litDone[lit] && c.isBody(lit) {
								c.litDone[lit] = true
								c.walk(lit, lit.Body, nil)
							}
						}
					}
				}
				// A named function (or method value) of this package as the body.
				if fd := c.declOf(body); fd != nil && !c.walked[fd] {
					c.walked[fd] = true
					c.walk(fd, fd.Body, nil)
				}
			}
		}
	})
	return nil, nil
}

// standsAlone reports whether only blanks precede the comment at p on its line.
func (c *checker) standsAlone(p token.Position) bool {
	src, err := c.pass.ReadFile(p.Filename)
	if err != nil || p.Offset > len(src) {
		return false
	}
	start := bytes.LastIndexByte(src[:p.Offset], '\n') + 1
	return len(bytes.TrimSpace(src[start:p.Offset])) == 0
}

func (c *checker) report(b body, pos token.Pos, what, instead string) {
	subject := "flow body"
	if len(b.via) > 0 {
		subject += " (through " + strings.Join(b.via, " → ") + ")"
	}
	msg := subject + " " + what + ": " + instead
	p := c.pass.Fset.Position(pos)
	key := p.String() + msg
	if c.reported[key] || c.allowed[fmt.Sprintf("%s:%d", p.Filename, p.Line)] {
		return
	}
	c.reported[key] = true
	c.pass.Reportf(pos, "%s", msg)
}

// callee is the function or method a call calls, if static (interface
// methods included), with type arguments removed.
func (c *checker) callee(call *ast.CallExpr) *types.Func {
	fun := ast.Unparen(call.Fun)
	switch f := fun.(type) {
	case *ast.IndexExpr:
		fun = f.X
	case *ast.IndexListExpr:
		fun = f.X
	}
	var obj types.Object
	switch f := ast.Unparen(fun).(type) {
	case *ast.Ident:
		obj = c.pass.TypesInfo.Uses[f]
	case *ast.SelectorExpr:
		if sel, ok := c.pass.TypesInfo.Selections[f]; ok {
			obj = sel.Obj()
		} else {
			obj = c.pass.TypesInfo.Uses[f.Sel]
		}
	}
	if fn, ok := obj.(*types.Func); ok {
		return fn.Origin()
	}
	return nil
}

// declOf is the declaration in this package of the function e names.
func (c *checker) declOf(e ast.Expr) *ast.FuncDecl {
	switch f := e.(type) {
	case *ast.IndexExpr:
		e = f.X
	case *ast.IndexListExpr:
		e = f.X
	}
	var obj types.Object
	switch f := ast.Unparen(e).(type) {
	case *ast.Ident:
		obj = c.pass.TypesInfo.Uses[f]
	case *ast.SelectorExpr:
		obj = c.pass.TypesInfo.Uses[f.Sel]
	}
	if fn, ok := obj.(*types.Func); ok {
		return c.decls[fn.Origin()]
	}
	return nil
}

func (c *checker) typeOf(e ast.Expr) types.Type {
	if t := c.pass.TypesInfo.TypeOf(e); t != nil {
		return t
	}
	return types.Typ[types.Invalid]
}

func within(n ast.Node, pos token.Pos) bool {
	return pos.IsValid() && n.Pos() <= pos && pos < n.End()
}

// rootIdent is the variable an assignable expression stores into: x for
// x, x.a.b, x[i], *x; nil when it is not a variable (f().a, a map of a call).
func rootIdent(e ast.Expr) *ast.Ident {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			return x
		case *ast.SelectorExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		default:
			return nil
		}
	}
}

// startsFlow reports whether call gives a flow body to a function of
// package task (Flow, or any other that takes one).
func (c *checker) startsFlow(call *ast.CallExpr) bool {
	fn := c.callee(call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != TaskPath || fn.Type().(*types.Signature).Recv() != nil {
		return false
	}
	for _, a := range call.Args {
		if c.isBody(a) {
			return true
		}
	}
	return false
}

// isBody reports whether e, an argument of a function of package task, is
// a flow body: a function whose first parameter is a *task.F.
func (c *checker) isBody(e ast.Expr) bool {
	sig, ok := c.typeOf(e).Underlying().(*types.Signature)
	return ok && sig.Params().Len() > 0 && isFPtr(sig.Params().At(0).Type())
}

func isWaitGroupGo(fn *types.Func) bool {
	return fn.Name() == "Go" && fn.Pkg() != nil && fn.Pkg().Path() == "sync" && recvName(fn) == "WaitGroup"
}

// isFPtr reports whether t is *task.F.
func isFPtr(t types.Type) bool {
	p, ok := t.(*types.Pointer)
	if !ok {
		return false
	}
	n, ok := p.Elem().(*types.Named)
	return ok && n.Obj().Name() == "F" && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == TaskPath
}
