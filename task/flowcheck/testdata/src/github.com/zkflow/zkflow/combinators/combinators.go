package combinators

import (
	"time"

	"github.com/zkflow/zkflow/task"
)

func Sleep(d time.Duration) task.Task[task.Unit] { return nil }
