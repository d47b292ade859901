//go:build linux

package shard

import (
	"os"
	"path/filepath"
)

// readCgroup reads the process's CPU cgroup: cgroup v1's cpu controller
// when it is mounted (cpu.cfs_quota_us and cpu.cfs_period_us, cpuacct.usage,
// cpu.stat), else cgroup v2's (cpu.max, cpu.stat).
func readCgroup() cgroupReading {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return cgroupReading{}
	}
	defer f.Close()
	v1cpu, v1acct, v2, err := parseProcCgroup(f)
	if err != nil {
		return cgroupReading{}
	}
	if v1cpu != "" {
		return readCgroupV1(v1cpu, v1acct)
	}
	if v2 != "" {
		return readCgroupV2(v2)
	}
	return cgroupReading{}
}

// v1Dir finds the directory of a v1 controller's group: under the
// controller's own mount, or the joint cpu,cpuacct one.
func v1Dir(controller, path string) string {
	for _, m := range []string{controller, "cpu,cpuacct", "cpuacct,cpu"} {
		d := filepath.Join("/sys/fs/cgroup", m, path)
		if _, err := os.Stat(d); err == nil {
			return d
		}
	}
	return ""
}

func readFile(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return string(b)
}

func readCgroupV1(cpuPath, acctPath string) cgroupReading {
	var r cgroupReading
	dir := v1Dir("cpu", cpuPath)
	if dir == "" {
		return r
	}
	if cores, ok := parseV1Quota(readFile(dir, "cpu.cfs_quota_us"), readFile(dir, "cpu.cfs_period_us")); ok {
		r.quotaCores, r.source = cores, "cgroup v1 cpu.cfs_quota_us"
		r.periods, r.throttled = parseCPUStat(readFile(dir, "cpu.stat"))
	}
	// The group's use counts against its quota only when cpuacct accounts
	// for the same group (a joint cpu,cpuacct mount, or the same path).
	if acctPath == cpuPath {
		if ad := v1Dir("cpuacct", acctPath); ad != "" {
			r.usage = parseV1Usage(readFile(ad, "cpuacct.usage"))
		}
	}
	return r
}

func readCgroupV2(path string) cgroupReading {
	var r cgroupReading
	dir := filepath.Join("/sys/fs/cgroup", path)
	stat := readFile(dir, "cpu.stat")
	r.usage = parseV2Usage(stat)
	if cores, ok := parseV2Max(readFile(dir, "cpu.max")); ok {
		r.quotaCores, r.source = cores, "cgroup v2 cpu.max"
		r.periods, r.throttled = parseCPUStat(stat)
	}
	return r
}
