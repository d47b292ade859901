//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/pathlab"
)

func TestMain(m *testing.M) { pathlab.Main(m) }

// TestMatrixAcrossShapedPath runs E2 (the built report) from one namespace against our iperf3
// server in the other, across a path shaped to 800 Mbit/s both ways, with
// -limit 800M: the TCP rows are limited by the limit; the UDP row above it
// is limited by the sender's queue (the sending host held it to what the
// shaper takes, and says what was delivered), the one below is not; and
// the same rows judged against a limit of 400M, which the path does not
// enforce, say so.
func TestMatrixAcrossShapedPath(t *testing.T) {
	const rate = 800e6
	sh := func() *pathlab.Shaper { return &pathlab.Shaper{Rate: rate} }
	lab := pathlab.New(t, &pathlab.Config{A: sh(), B: sh()})
	if lab == nil || t.Skipped() {
		return
	}
	iperf3 := pathlab.Build(t, "github.com/netperfkit/netperfkit/examples/iperf3")
	report := pathlab.Build(t, "github.com/netperfkit/netperfkit/examples/report")
	const port = 5298
	ctx, cancel := context.WithCancel(context.Background())
	srv := lab.B.Command(ctx, iperf3, "-s", "-p", strconv.Itoa(port))
	require.NoError(t, srv.Start())
	t.Cleanup(func() {
		cancel()
		_ = srv.Wait()
	})
	lab.B.WaitListening(t, port, 10*time.Second)

	var sec *MatrixSection
	var bad, short []string
	var machine bool
	// A starved CPU, not the path, can hold a row under 90 % of the limit
	// (docs/testing.md); the matrix runs three times at most, and a
	// shortfall in a try the machine starved (pathlab.Starved) is logged.
	for try := 1; try <= 3; try++ {
		pr := pathlab.StartCPUPressure()
		sec = pathMatrix(t, lab, report, port)
		if bad, short = judgePathRows(sec); len(bad)+len(short) == 0 {
			break
		}
		t.Logf("try %d: %v %v", try, bad, short)
		machine = pr.MachineStarved(t)
	}
	require.Empty(t, bad)
	if !machine {
		require.Empty(t, short)
	}
	for _, r := range sec.Rows {
		t.Logf("%s %s: received %.0f bit/s, limited by %q (%s)", r.Scenario, r.Direction, r.ReceivedBitsPerSecond, r.LimitedBy, r.LimitedByDetail)
	}
	for i := range sec.Rows {
		r := sec.Rows[i]
		by, detail := limitedBy(&r, rate/2, runtime.NumCPU())
		if r.Protocol == "tcp" && r.LimitedBy == "limit" {
			// "above the stated limit", or another reason (retransmits)
			// followed by the same words.
			assert.NotEqual(t, "limit", by, "%s %s at a stated 400M", r.Scenario, r.Direction)
			assert.Contains(t, detail, "of the stated limit: it was not in effect", "%s %s at a stated 400M: %s", r.Scenario, r.Direction, by)
		}
	}
}

// pathMatrix runs the report's matrix from A: the built tool, not run()
// in-process, so a -race test run measures an uninstrumented sender.
func pathMatrix(t *testing.T, lab *pathlab.Lab, report string, port int) *MatrixSection {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := lab.A.Command(ctx, report, "-skip", "paths,cache", "-imds", "off", "-progress", "off", "-json",
		"-matrix", lab.B.Addr.String(), "-tport", strconv.Itoa(port), "-limit", "800M", "-rates", "400M,1200M",
		"-d", "1s", "-mstreams", "4")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	var rep struct {
		Matrix *MatrixSection `json:"matrix"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), "%s", stdout.String())
	require.NotNil(t, rep.Matrix)
	require.Len(t, rep.Matrix.Rows, 6)
	return rep.Matrix
}

// judgePathRows lists what is wrong with the rows' verdicts on the 800M
// path, and apart (short) TCP rows that fell under the limit's band, which
// only a starved machine explains.
func judgePathRows(sec *MatrixSection) (bad, short []string) {
	for _, r := range sec.Rows {
		name := r.Scenario + " " + r.Direction
		switch {
		case r.Error != "":
			bad = append(bad, name+": "+r.Error)
		case r.Protocol == "tcp" && r.LimitedBy != "limit" && r.PercentOfLimit < 100*nearLimit:
			short = append(short, fmt.Sprintf("%s: limited by %q (%s), %.0f%% of the limit", name, r.LimitedBy, r.LimitedByDetail, r.PercentOfLimit))
		case r.Protocol == "tcp" && r.LimitedBy != "limit":
			bad = append(bad, fmt.Sprintf("%s: limited by %q (%s), %.0f%% of the limit", name, r.LimitedBy, r.LimitedByDetail, r.PercentOfLimit))
		case r.Protocol == "udp" && r.TargetBitsPerSecond > 800e6 && r.LocalRetries == 0 && r.LimitedBy == "generator":
			// A sender that never filled its queue was starved.
			short = append(short, fmt.Sprintf("%s: limited by %q (%s)", name, r.LimitedBy, r.LimitedByDetail))
		case r.Protocol == "udp" && r.TargetBitsPerSecond > 800e6:
			if r.LimitedBy != "sender's queue" || r.LocalRetries == 0 || r.LocalDrops != 0 ||
				!strings.Contains(r.LimitedByDetail, "delivered") || r.PercentOfLimit > 105 {
				bad = append(bad, fmt.Sprintf("%s: limited by %q (%s), retries %d, drops %d", name, r.LimitedBy, r.LimitedByDetail, r.LocalRetries, r.LocalDrops))
			}
		case r.Protocol == "udp":
			if r.LimitedBy == "sender's queue" || r.LimitedBy == "limit" || r.LocalDrops != 0 || r.LocalRetries != 0 {
				bad = append(bad, fmt.Sprintf("%s: below the limit, limited by %q (%s)", name, r.LimitedBy, r.LimitedByDetail))
			}
		}
	}
	return bad, short
}
