//go:build !unix

package wiresim

import "time"

// processCPU is not measured here: the report's CPU figures read 0.
func processCPU() time.Duration { return 0 }
