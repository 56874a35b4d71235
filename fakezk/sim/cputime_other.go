//go:build !unix

package sim

import "time"

// processCPU is not measured on this system: the report's CPU figures
// are 0.
func processCPU() time.Duration { return 0 }
