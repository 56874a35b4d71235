package fence_test

import (
	"testing"

	"github.com/zkflow/zkflow/recipes/fence"
	"github.com/zkflow/zkflow/recipes/fence/fencetest"
)

func TestMemory(t *testing.T) {
	fencetest.Run(t, func(*testing.T) fence.Store[uint64] { return &fence.Memory{} })
}
