package task

// A flow in package task itself: its helpers in the package are followed
// like any package's.
func selfFlow(ch chan int) Task[int] {
	return Flow(func(f *F) (int, error) {
		v, err := Await(f, Func(func() (int, error) { return 1, nil }))
		return v + wait(ch), err
	})
}

func wait(ch chan int) int {
	return <-ch // want `flow body \(through wait\) receives from a channel`
}
