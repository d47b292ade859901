//go:build !linux

package latency

import "time"

// processCPU is zero where the benchmark does not read it.
func processCPU() time.Duration { return 0 }
