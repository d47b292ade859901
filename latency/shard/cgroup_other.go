//go:build !linux

package shard

// readCgroup knows nothing of cgroups outside Linux.
func readCgroup() cgroupReading { return cgroupReading{} }
