package main

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// setAffinity pins the whole process to one CPU, as 3.21's
// sched_setaffinity(0, ...) pins its single-threaded start. Linux applies
// a mask to one thread, so every thread of the process gets it; threads
// started later inherit it from the thread that starts them.
func setAffinity(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	return setAllThreads(&set)
}

// setAllThreads sets every thread's mask. A thread started during a pass
// by one not yet set inherits the old mask, so the passes go on until one
// finds no thread it has not set (a few at most: the runtime starts threads
// rarely).
func setAllThreads(set *unix.CPUSet) error {
	done := map[int]bool{}
	for range 8 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return unix.SchedSetaffinity(0, set)
		}
		fresh := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || done[tid] {
				continue
			}
			// A thread that has exited since the listing is not an error.
			if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
				return err
			}
			done[tid], fresh = true, true
		}
		if !fresh {
			return nil
		}
	}
	return nil
}
