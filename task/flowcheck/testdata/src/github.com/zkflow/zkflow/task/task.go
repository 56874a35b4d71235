// Package task is a stub of the real package's flow API: the analyzer
// recognizes Flow, Await and F by package path and name.
package task

type Unit struct{}

type Cont[T any] func(T, error)

type Task[T any] func(s *Scope, k Cont[T])

type Scope struct{}

type F struct{ n int }

func Flow[T any](body func(f *F) (T, error)) Task[T] { return nil }

func Await[T any](f *F, t Task[T]) (T, error) {
	var zero T
	return zero, nil
}

func Func[T any](fn func() (T, error)) Task[T] { return nil }

// FlowNamed stands for any other function of package task that takes a
// body: the analyzer recognizes the body by its *F parameter.
func FlowNamed[T any](name string, body func(f *F) (T, error)) Task[T] { return nil }

func Value[T any](v T) Task[T] { return nil }

func Suspend[T any](s *Scope, k Cont[T], start func(resume Cont[T]) (stop func())) {}
