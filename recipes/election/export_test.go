package election

import "github.com/zkflow/zkflow/executor"

// ClientOf is the blocking face of cand on ex, for tests that hold an
// *Election or a *Master already.
func ClientOf(ex *executor.Executor, cand Candidate) *Client { return &Client{ex: ex, cand: cand} }

// Lowest is the name among names that leads the election (the lowest
// candidate, in the order campaigns use), and false if names holds no
// candidate.
func Lowest(names []string) (string, bool) {
	q := queue(names)
	if len(q) == 0 {
		return "", false
	}
	return q[0].Name, true
}

// DeleteMasterNode is deleteMasterNode, for a test that runs two cleanups
// of one master node.
var DeleteMasterNode = deleteMasterNode
