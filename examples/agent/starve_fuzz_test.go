package main

import (
	"strings"
	"testing"
)

// The starvation parsers read kernel files: any input gives a value or an
// error, never a panic, and a value is never negative.

func FuzzParseSchedstat(f *testing.F) {
	for _, s := range []string{"123 456 7\n", "0 0 0", "", "1 2", "18446744073709551615 1 1", "1 2 3 4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		run, wait, err := parseSchedstat(strings.NewReader(s))
		if err == nil && (run < 0 || wait < 0) {
			t.Fatalf("%q: negative %v %v", s, run, wait)
		}
	})
}

func FuzzParsePressure(f *testing.F) {
	for _, s := range []string{
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=15545358\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"some total=1", "full total=1", "some avg10=1", "some total=-1", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePressure(strings.NewReader(s))
		if err == nil && (p.some < 0 || p.full < 0) {
			t.Fatalf("%q: negative %+v", s, p)
		}
	})
}

func FuzzParseCPUStat(f *testing.F) {
	for _, s := range []string{
		"nr_periods 10\nnr_throttled 4\nthrottled_time 5000000\n",
		"usage_usec 1\nnr_periods 3\nnr_throttled 2\nthrottled_usec 700\n",
		"usage_usec 1\n", "nr_throttled x\n", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := parseCPUStat(strings.NewReader(s))
		if err == nil && st.throttledTime < 0 {
			t.Fatalf("%q: negative %+v", s, st)
		}
	})
}

func FuzzCgroupCPUDir(f *testing.F) {
	for _, s := range []string{"1:cpu:/np33\n0::/\n", "4:cpu,cpuacct:/k\n", "0::/pod/x\n", "::::", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = cgroupCPUDir(strings.NewReader(s), "/c", func(string) bool { return true })
	})
}
