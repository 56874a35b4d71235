package combinators_test

import (
	"reflect"

	"github.com/zkflow/zkflow/task"
)

func funcEq(a, b task.Task[int]) bool {
	return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
}
