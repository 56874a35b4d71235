package executor

// SetAfterPost makes each Submit on e call f once it has handed its flow
// to the executor and before it wakes Run: a test holds a submitter there
// while Close overtakes it.
func SetAfterPost(e *Executor, f func()) { e.afterPost = f }
