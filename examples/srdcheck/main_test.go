package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/ethtool/ethtooltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fixture(name string) string { return filepath.Join("..", "..", "ethtool", "testdata", name) }

func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"-before", "x"}, {"-i", "eth0", "-window", "0s"}, {"-i", "eth0", "x"}, {"-readiness"}} {
		code, _, stderr := runArgs(t, args...)
		assert.Equal(t, 2, code, "%v", args)
		assert.NotEmpty(t, stderr, "%v", args)
	}
}

func TestFilesJSONSameAZ(t *testing.T) {
	code, out, stderr := runArgs(t, "-before", fixture("ena-2.17-same-az-before.txt"), "-after", fixture("ena-2.17-same-az-after.txt"), "-i", "eth0", "-json")
	require.Equal(t, 0, code, stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, 3.0, got["srd_mode"])
	assert.Equal(t, true, got["express_enabled"])
	assert.Equal(t, true, got["udp_enabled"])
	assert.Equal(t, 28195047.0, got["tx_pkts_delta"])
	assert.Equal(t, 28195063.0, got["eligible_tx_pkts_delta"])
	assert.Equal(t, 27991023.0, got["rx_pkts_delta"])
	assert.InDelta(t, 0.99999943, got["coverage"], 1e-8)
	assert.Equal(t, "srd_carried_traffic", got["verdict"])
	assert.Equal(t, "eth0", got["interface"])
	assert.NotContains(t, got, "readiness")
}

func TestFilesText(t *testing.T) {
	code, out, _ := runArgs(t, "-before", fixture("ena-2.17-cross-az-before.txt"), "-after", fixture("ena-2.17-cross-az-after.txt"))
	require.Equal(t, 0, code)
	assert.Contains(t, out, "ena_srd_mode   3 (ENA Express on, UDP on)\n")
	assert.Contains(t, out, "srd tx         +24534321\n")
	assert.Contains(t, out, "eligible tx    +24534339\n")
	assert.Contains(t, out, "verdict        srd_carried_traffic: SRD carried 24534321 of 24534339")

	// Reversed snapshots: every counter went backwards.
	code, out, _ = runArgs(t, "-before", fixture("ena-2.17-cross-az-after.txt"), "-after", fixture("ena-2.17-cross-az-before.txt"))
	assert.Equal(t, 3, code)
	assert.Contains(t, out, "verdict        counters_reset:")

	code, out, _ = runArgs(t, "-before", fixture("ena-2.4-no-srd.txt"), "-after", fixture("ena-2.4-no-srd.txt"))
	assert.Equal(t, 3, code)
	assert.Contains(t, out, "verdict        no_srd_statistics:")
	assert.NotContains(t, out, "ena_srd_mode")

	code, _, stderr := runArgs(t, "-before", fixture("nope.txt"), "-after", fixture("ena-2.4-no-srd.txt"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "nope.txt")
}

func TestReadinessFixture(t *testing.T) {
	root := filepath.Join("..", "..", "srd", "testdata", "host-default")
	code, out, stderr := runArgs(t, "-readiness", "-i", "eth0", "-root", root, "-json")
	require.Equal(t, 3, code, stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, "fail", got["readiness_status"])
	assert.NotContains(t, got, "verdict", "only readiness was asked for")
	checks := got["readiness"].([]any)
	first := checks[0].(map[string]any)
	assert.Equal(t, "mtu", first["name"])
	assert.Equal(t, "9001", first["value"])
	assert.Equal(t, "fail", first["status"])

	code, out, _ = runArgs(t, "-readiness", "-i", "eth0", "-root", filepath.Join("..", "..", "srd", "testdata", "host-ready"))
	// Ring sizes come from the live ioctl on this machine's eth0, if it has
	// one: pass or warn, never fail, so the fixture host passes.
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "pass mtu ")
	assert.Regexp(t, `readiness      (pass|warn)\n`, out)

	code, _, stderr = runArgs(t, "-readiness", "-i", "eth7", "-root", root)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "eth7")

	// A window and the readiness checks side by side, with the EC2 check
	// that needs the window's ena_srd_mode.
	enis := filepath.Join("..", "..", "srd", "testdata", "describe-network-interfaces.json")
	code, out, stderr = runArgs(t, "-readiness", "-i", "eth0", "-root", root, "-json", "-eni", enis, "-mac", "0e:12:34:56:78:9a",
		"-before", fixture("ena-2.17-same-az-before.txt"), "-after", fixture("ena-2.17-same-az-after.txt"))
	require.Equal(t, 3, code, stderr)
	got = nil
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, "srd_carried_traffic", got["verdict"])
	assert.Equal(t, "fail", got["readiness_status"])
	assert.Contains(t, got, "spec_check")
}

func TestReadinessTakesTheWindowWhenAsked(t *testing.T) {
	for _, c := range []struct {
		args   []string
		window bool
	}{
		{[]string{"-readiness", "-i", "eth0"}, false},
		{[]string{"-readiness", "-i", "eth0", "-window", "10s"}, true}, // the default value, given explicitly
		{[]string{"-readiness", "-i", "eth0", "-window", "1s", "-json"}, true},
		{[]string{"-readiness", "-i", "eth0", "-eni", "enis.json"}, true},
		{[]string{"-readiness", "-i", "eth0", "-before", "a", "-after", "b"}, true},
		{[]string{"-i", "eth0"}, true},
		{[]string{"-i", "eth0", "-eni", "enis.json"}, true},
	} {
		o, err := parseFlags(c.args, io.Discard)
		require.NoError(t, err, "%v", c.args)
		assert.Equal(t, c.window, o.coverage(), "%v", c.args)
	}
}

// TestLiveReadinessWithWindow runs the documented
// `srdcheck -i IFACE -window 10s -readiness -json` (with a shorter window)
// on a veth, with a fixture root holding the host settings under its name:
// the window is taken and judged next to the readiness checks.
func TestLiveReadinessWithWindow(t *testing.T) {
	v := ethtooltest.NewVeth(t)
	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS(filepath.Join("..", "..", "srd", "testdata", "host-ready"))))
	require.NoError(t, os.Rename(filepath.Join(root, "sys", "class", "net", "eth0"), filepath.Join(root, "sys", "class", "net", v.Name)))

	var code int
	var out, errb bytes.Buffer
	require.NoError(t, ethtooltest.InNetns(v.NetnsPath(), func() error {
		code = run(context.Background(), []string{"-i", v.Name, "-window", "50ms", "-readiness", "-root", root, "-json"}, &out, &errb)
		return nil
	}))
	require.Equal(t, 3, code, errb.String())
	var got map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	assert.Equal(t, "no_srd_statistics", got["verdict"], "the window was taken")
	assert.Greater(t, got["window_seconds"], 0.04)
	assert.Contains(t, []any{"pass", "warn"}, got["readiness_status"])
	assert.NotEmpty(t, got["readiness"])

	// -eni with -readiness needs the window's ena_srd_mode: without
	// -window it waits the default 10 s, which the cancel cuts short.
	enis := filepath.Join("..", "..", "srd", "testdata", "describe-network-interfaces.json")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	out.Reset()
	errb.Reset()
	require.NoError(t, ethtooltest.InNetns(v.NetnsPath(), func() error {
		code = run(ctx, []string{"-i", v.Name, "-readiness", "-root", root, "-eni", enis, "-mac", "0e:12:34:56:78:9a"}, &out, &errb)
		return nil
	}))
	assert.Equal(t, 1, code, out.String())
	assert.Contains(t, errb.String(), "interrupted before the window ended")
}

func TestLiveVethHasNoSRD(t *testing.T) {
	v := ethtooltest.NewVeth(t)
	var code int
	var out, errb bytes.Buffer
	start := time.Now()
	require.NoError(t, ethtooltest.InNetns(v.NetnsPath(), func() error {
		code = run(context.Background(), []string{"-i", v.Name, "-window", "50ms", "-json"}, &out, &errb)
		return nil
	}))
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	require.Equal(t, 3, code, errb.String())
	var got map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	assert.Equal(t, "no_srd_statistics", got["verdict"])
	assert.Equal(t, v.Name, got["interface"])
	assert.Greater(t, got["window_seconds"], 0.04)

	out.Reset()
	errb.Reset()
	require.NoError(t, ethtooltest.InNetns(v.NetnsPath(), func() error {
		code = run(context.Background(), []string{"-i", "lo", "-window", "1ms"}, &out, &errb)
		return nil
	}))
	assert.Equal(t, 1, code)
	assert.Contains(t, errb.String(), "lo: interface has no driver statistics")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, ethtooltest.InNetns(v.NetnsPath(), func() error {
		code = run(ctx, []string{"-i", v.Name, "-window", "1h"}, &out, &errb)
		return nil
	}))
	assert.Equal(t, 1, code)
	assert.Contains(t, errb.String(), "interrupted")
}

func TestENISpec(t *testing.T) {
	enis := filepath.Join("..", "..", "srd", "testdata", "describe-network-interfaces.json")
	before, after := fixture("ena-2.17-same-az-before.txt"), fixture("ena-2.17-same-az-after.txt")
	code, out, stderr := runArgs(t, "-before", before, "-after", after, "-eni", enis, "-mac", "0e:12:34:56:78:9a", "-json")
	require.Equal(t, 0, code, stderr)
	var got struct {
		SpecCheck struct {
			Status string `json:"status"`
			Expect string `json:"expect"`
		} `json:"spec_check"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, "pass", got.SpecCheck.Status)
	assert.Contains(t, got.SpecCheck.Expect, "eni-0f1e2d3c4b5a69788")

	// The second ENI has ENA Express off in EC2, but the driver says 3.
	code, out, _ = runArgs(t, "-before", before, "-after", after, "-eni", enis, "-mac", "0e:12:34:56:78:9b")
	assert.Equal(t, 3, code)
	assert.Contains(t, out, "ec2 spec       fail: driver 3 (ENA Express on, UDP on), want 0 (ENA Express off, UDP off)")

	code, _, stderr = runArgs(t, "-before", before, "-after", after, "-eni", enis)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "-eni needs")

	code, _, stderr = runArgs(t, "-before", before, "-after", after, "-eni", "nope.json", "-mac", "x")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "nope.json")
}
