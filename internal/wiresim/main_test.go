package wiresim_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every seed closes its clients, its wire server and its fake server and
// waits for their goroutines before it returns (RunSeed), so nothing of
// a seed may outlive the tests: goleak checks it with its own retries,
// which cover go-zookeeper's goroutines that end just after Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
