package flowcheck

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/ast/inspector"
)

// A store is a value stored into a local variable v, or into a part of it
// (v.a, v[i], *v): rhs, or result res of the call rhs (res < 0: rhs's
// own value).
type store struct {
	v   *types.Var
	rhs ast.Expr
	res int
}

// collectStores records the package's stores into local variables, the
// function literals stored whole in one (a body may be held in a
// variable), and which local variables may hold a *task.F: those a value
// that holds one is stored into (holdsF), to a fixed point.
func (c *checker) collectStores(ins *inspector.Inspector) {
	add := func(lhs ast.Expr, rhs []ast.Expr, i, n int) {
		root := rootIdent(lhs)
		if root == nil {
			return
		}
		v, ok := c.pass.TypesInfo.ObjectOf(root).(*types.Var)
		if !ok || !isLocal(v) {
			return
		}
		switch {
		case len(rhs) == n:
			c.stores = append(c.stores, store{v, rhs[i], -1})
			if lit, ok := ast.Unparen(rhs[i]).(*ast.FuncLit); ok && ast.Unparen(lhs) == root {
				c.lits[v] = append(c.lits[v], lit)
			}
		case len(rhs) == 1:
			c.stores = append(c.stores, store{v, rhs[0], i})
		}
	}
	ins.Preorder([]ast.Node{(*ast.AssignStmt)(nil), (*ast.ValueSpec)(nil)}, func(n ast.Node) {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok != token.ASSIGN && n.Tok != token.DEFINE {
				return
			}
			for i, l := range n.Lhs {
				add(l, n.Rhs, i, len(n.Lhs))
			}
		case *ast.ValueSpec:
			for i, name := range n.Names {
				add(name, n.Values, i, len(n.Names))
			}
		}
	})
	for changed := true; changed; {
		changed = false
		for _, s := range c.stores {
			if !c.holders[s.v] && c.storeHoldsF(s) {
				c.holders[s.v] = true
				changed = true
			}
		}
	}
}

// isLocal reports whether v is a variable of a function (not a package's
// variable, not a field).
func isLocal(v *types.Var) bool {
	return !v.IsField() && v.Pkg() != nil && v.Parent() != nil && v.Parent() != v.Pkg().Scope()
}

func (c *checker) storeHoldsF(s store) bool {
	if s.res < 0 {
		return c.holdsF(s.rhs)
	}
	if call, ok := ast.Unparen(s.rhs).(*ast.CallExpr); ok {
		if t, ok := c.typeOf(call).(*types.Tuple); ok {
			return s.res < t.Len() && containsF(t.At(s.res).Type(), nil) && c.givenF(call)
		}
	}
	return s.res == 0 && c.holdsF(s.rhs) // v, ok := x.(T), m[k], <-ch
}

// holdsF reports whether the value of e may hold a *task.F: an F; a local
// variable that holds one; a function literal that captures one; a
// composite literal or an address of one that holds one; a method value
// bound to one, or a part of one (field, element, slice) whose type has a
// *task.F in it; a conversion of one; or a call given one whose result's
// type has a *task.F in it (a constructor). A part or a call's result
// whose type has none (an error, a closure, a byte slice) is taken not to.
func (c *checker) holdsF(e ast.Expr) bool {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		v, ok := c.pass.TypesInfo.Uses[x].(*types.Var)
		return ok && (isFPtr(v.Type()) || c.holders[v])
	case *ast.FuncLit:
		return c.capturesF(x)
	case *ast.CompositeLit:
		for _, el := range x.Elts {
			if c.holdsF(el) {
				return true
			}
		}
	case *ast.KeyValueExpr:
		return c.holdsF(x.Value)
	case *ast.UnaryExpr:
		return x.Op == token.AND && c.holdsF(x.X)
	case *ast.StarExpr:
		return c.holdsF(x.X)
	case *ast.SelectorExpr:
		if sel, ok := c.pass.TypesInfo.Selections[x]; ok {
			switch sel.Kind() {
			case types.MethodVal:
				return c.holdsF(x.X)
			case types.FieldVal:
				return containsF(c.typeOf(x), nil) && c.holdsF(x.X)
			}
			return false
		}
		return c.holdsF(x.Sel) // a package's variable
	case *ast.IndexExpr:
		return containsF(c.typeOf(x), nil) && c.holdsF(x.X)
	case *ast.SliceExpr:
		return c.holdsF(x.X)
	case *ast.TypeAssertExpr:
		return c.holdsF(x.X)
	case *ast.CallExpr:
		if tv, ok := c.pass.TypesInfo.Types[x.Fun]; ok && tv.IsType() {
			return len(x.Args) == 1 && c.holdsF(x.Args[0])
		}
		return containsF(c.typeOf(x), nil) && c.givenF(x)
	}
	return false
}

// givenF reports whether a call is given a value that holds a *task.F, as
// an argument or as the receiver of a method.
func (c *checker) givenF(call *ast.CallExpr) bool {
	for _, a := range call.Args {
		if c.holdsF(a) {
			return true
		}
	}
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
		if s, ok := c.pass.TypesInfo.Selections[sel]; ok && s.Kind() == types.MethodVal {
			return c.holdsF(sel.X)
		}
	}
	return false
}

// capturesF reports whether a function literal refers to a *task.F, or a
// variable that holds one, declared outside it.
func (c *checker) capturesF(lit *ast.FuncLit) bool {
	found := false
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && !found {
			if v, ok := c.pass.TypesInfo.Uses[id].(*types.Var); ok && !v.IsField() && !within(lit, v.Pos()) && (isFPtr(v.Type()) || c.holders[v]) {
				found = true
			}
		}
		return !found
	})
	return found
}

// containsF reports whether a value of type t has a *task.F in it: is one,
// or points to, holds as an element, or has as a field a value that has.
func containsF(t types.Type, seen map[types.Type]bool) bool {
	if isFPtr(t) {
		return true
	}
	if seen[t] {
		return false
	}
	if seen == nil {
		seen = map[types.Type]bool{}
	}
	seen[t] = true
	switch u := t.Underlying().(type) {
	case *types.Pointer:
		return containsF(u.Elem(), seen)
	case *types.Slice:
		return containsF(u.Elem(), seen)
	case *types.Array:
		return containsF(u.Elem(), seen)
	case *types.Chan:
		return containsF(u.Elem(), seen)
	case *types.Map:
		return containsF(u.Key(), seen) || containsF(u.Elem(), seen)
	case *types.Struct:
		for i := range u.NumFields() {
			if containsF(u.Field(i).Type(), seen) {
				return true
			}
		}
	}
	return false
}

// writtenIn is the set of variables the code of root changes: assigns to
// (or to a field or element of: v.a, v[i], *v), increments, takes the
// address of, or calls a pointer method on (its address taken implicitly).
// A declaration is not a change.
func (c *checker) writtenIn(root ast.Node) map[*types.Var]bool {
	if w, ok := c.written[root]; ok {
		return w
	}
	w := map[*types.Var]bool{}
	mark := func(e ast.Expr) {
		if id := rootIdent(e); id != nil {
			if v, ok := c.pass.TypesInfo.Uses[id].(*types.Var); ok {
				w[v] = true
			}
		}
	}
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				mark(l) // a name a := declares is in Defs, not Uses
			}
		case *ast.IncDecStmt:
			mark(n.X)
		case *ast.RangeStmt:
			if n.Tok == token.ASSIGN {
				if n.Key != nil {
					mark(n.Key)
				}
				if n.Value != nil {
					mark(n.Value)
				}
			}
		case *ast.UnaryExpr:
			if n.Op == token.AND {
				mark(n.X)
			}
		case *ast.SelectorExpr:
			if s, ok := c.pass.TypesInfo.Selections[n]; ok && s.Kind() == types.MethodVal {
				if sig, ok := s.Obj().Type().(*types.Signature); ok && sig.Recv() != nil {
					if _, ptr := sig.Recv().Type().(*types.Pointer); ptr {
						if _, isPtr := c.typeOf(n.X).Underlying().(*types.Pointer); !isPtr {
							mark(n.X)
						}
					}
				}
			}
		}
		return true
	})
	c.written[root] = w
	return w
}
