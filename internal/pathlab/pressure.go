package pathlab

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Starved is the share of a flow's time in which some task waited for a
// CPU (CPUPressure) from which a sender's shortfall below the shaped rate
// is the machine's, not the path's or the sender's: a test then logs the
// shortfall instead of failing on it, and still asserts the upper bounds
// and the accounting (docs/testing.md).
const Starved = 0.5

// CPUPressure measures, over a span, the share of wall time in which at
// least one task was runnable and waiting for a CPU (linux PSI,
// /proc/pressure/cpu "some").
type CPUPressure struct {
	start time.Time
	total int64 // microseconds
	ok    bool
}

// StartCPUPressure starts a measurement.
func StartCPUPressure() CPUPressure {
	t, ok := readPressure()
	return CPUPressure{start: time.Now(), total: t, ok: ok}
}

// MachineStarved reports whether some task waited for a CPU for Starved or
// more of the time since p started, and logs the share when it did: a try's
// shortfall below the shaped rate is then the machine's, and only the bounds
// that hold on any machine are judged. Without PSI it reports false.
func (p CPUPressure) MachineStarved(tb testing.TB) bool {
	tb.Helper()
	share, ok := p.Share()
	if ok && share >= Starved {
		tb.Logf("CPU pressure %.0f%% during the try: a shortfall is the machine's", 100*share)
		return true
	}
	return false
}

// Share returns the share of the time since the start in which some task
// waited for a CPU, 0-1; ok is false without PSI (then a test judges every
// try, as on a quiet machine).
func (p CPUPressure) Share() (share float64, ok bool) {
	t, ok := readPressure()
	wall := time.Since(p.start).Microseconds()
	if !ok || !p.ok || wall <= 0 {
		return 0, false
	}
	return min(float64(t-p.total)/float64(wall), 1), true
}

func readPressure() (int64, bool) {
	f, err := os.Open("/proc/pressure/cpu")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	return parsePressure(f)
}

// parsePressure returns the "some" line's total (microseconds).
func parsePressure(r io.Reader) (int64, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}
