package latency_test

import "time"

// usOf converts d to float microseconds, the unit sockperf prints.
func usOf(d time.Duration) float64 { return float64(d) / 1e3 }
