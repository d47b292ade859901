//go:build linux

package throughput

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

const affinityAvailable = true

// allowedCPU checks that cpu is one of the CPUs this process may run on:
// the calling thread's mask, which every thread has that this package did
// not pin (taskset, systemd's CPUAffinity= or the cgroup's cpuset set it).
// errno is what sched_setaffinity says of a CPU outside it, EINVAL.
func allowedCPU(cpu int) (errno int, err error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		en, _ := err.(unix.Errno)
		return int(en), fmt.Errorf("%w: %w", ErrAffinity, err)
	}
	if !set.IsSet(cpu) {
		return int(unix.EINVAL), fmt.Errorf("%w: CPU %d is not one of this server's CPUs (%s): %w", ErrAffinity, cpu, cpuList(&set), unix.EINVAL)
	}
	return 0, nil
}

// cpuList writes a CPU set as the kernel's lists do ("0-3,6").
func cpuList(set *unix.CPUSet) string {
	var b strings.Builder
	for c := 0; c < len(set)*64; c++ {
		if !set.IsSet(c) || (c > 0 && set.IsSet(c-1)) {
			continue
		}
		end := c
		for end+1 < len(set)*64 && set.IsSet(end+1) {
			end++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c))
		if end > c {
			b.WriteString("-" + strconv.Itoa(end))
		}
	}
	return b.String()
}

// pinThread locks the calling goroutine to its OS thread and confines that
// thread to cpu. unpin gives the thread its CPUs back and unlocks it; when
// that fails the goroutine stays locked, so that the thread ends with it
// instead of carrying the pin to other goroutines. (Threads the runtime
// starts while a goroutine is locked come from its template thread, not
// from the pinned one.)
func pinThread(cpu int) (unpin func(), err error) {
	runtime.LockOSThread()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return func() {
		if unix.SchedSetaffinity(0, &old) == nil {
			runtime.UnlockOSThread()
		}
	}, nil
}
