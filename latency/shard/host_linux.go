//go:build linux

package shard

import "os"

// readHost reads the host's CPU time from /proc/stat.
func readHost() hostReading {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return hostReading{}
	}
	return parseProcStat(string(b))
}
