package sim

import "fmt"

// OperatorDeleteNow is the Operator fault aimed by the scenario at a node
// of its own choosing (a client's path), at a moment of its own choosing
// (two contender nodes of one Client in a directory at once, say): an
// operator deletes the node now, and does not make it again. It is noted
// in the fault log as the injector's faults are (aimed by the scenario),
// counted as an Operator fault, and the judges that excuse what an
// operator touched know of it. It draws nothing from the seed's fault
// streams. It does nothing, and returns false, unless the faults are on
// now and the seed's plan has the Operator class, or if the node is gone,
// has children or the server is down.
func (r *Trial) OperatorDeleteNow(path string) bool {
	in := r.inj
	if in == nil || !in.active || !in.plan.On.Has(Operator) || r.faultsOff {
		return false
	}
	w := in.w
	_, st, ok := w.NodeData(path)
	if !ok || st.NumChildren != 0 {
		return false
	}
	if err := w.Server.AdminDelete(w.ServerPath(path)); err != nil {
		return false
	}
	w.operated = append(w.operated, touch{at: w.Clock.Now(), path: path, czxid: st.Czxid})
	in.fired[Operator]++
	in.note(Operator, -1, 0, false, fmt.Sprintf("deleted %s (aimed by the scenario)", path))
	return true
}
