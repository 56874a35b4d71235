package election

import "github.com/zkflow/zkflow/executor"

// ClientOf is the blocking face of cand on ex, for tests that hold an
// *Election or a *Master already.
func ClientOf(ex *executor.Executor, cand Candidate) *Client { return &Client{ex: ex, cand: cand} }
