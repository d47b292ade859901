package srd

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestModeString(t *testing.T) {
	for m, want := range map[ExpressMode]string{
		0:     "ENA Express off, UDP off",
		1:     "ENA Express on, UDP off",
		2:     "ENA Express off, UDP on (inactive while ENA Express is off)",
		3:     "ENA Express on, UDP on",
		7:     "ENA Express on, UDP on, UDP ordering bypass on",
		11:    "ENA Express on, UDP on, unknown bits 0x8",
		0x103: "ENA Express on, UDP on, unknown bits 0x100",
	} {
		assert.Equal(t, want, m.String(), "mode %d", m)
	}
	assert.True(t, ExpressMode(3).Express())
	assert.True(t, ExpressMode(3).UDP())
	assert.Equal(t, ExpressMode(8), ExpressMode(11).unknown())
	b, err := json.Marshal(struct{ M ExpressMode }{3})
	require.NoError(t, err)
	assert.JSONEq(t, `{"M":3}`, string(b))
}

func TestParseNetworkInterfaces(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "describe-network-interfaces.json"))
	require.NoError(t, err)
	defer f.Close()
	nis, err := ParseNetworkInterfaces(f)
	require.NoError(t, err)
	require.Len(t, nis, 3)
	assert.Equal(t, NetworkInterface{
		ID: "eni-0f1e2d3c4b5a69788", AvailabilityZone: "us-east-1a", MACAddress: "0e:12:34:56:78:9a",
		EnaSrd: new(ExpressMode(3)),
	}, nis[0])
	assert.Equal(t, ExpressMode(3), *nis[0].EnaSrd)
	assert.Equal(t, ExpressMode(0), *nis[1].EnaSrd)
	assert.Nil(t, nis[2].EnaSrd, "an unattached ENI has no specification")

	bare, err := ParseNetworkInterfaces(strings.NewReader(`[{"NetworkInterfaceId":"eni-1","Attachment":{"EnaSrdSpecification":{"EnaSrdEnabled":true}}}]`))
	require.NoError(t, err)
	assert.Equal(t, new(ExpressMode(1)), bare[0].EnaSrd)

	// The specification at the top level (where it is not) is ignored.
	top, err := ParseNetworkInterfaces(strings.NewReader(`{"NetworkInterfaces":[{"NetworkInterfaceId":"eni-2","EnaSrdSpecification":{"EnaSrdEnabled":true}}]}`))
	require.NoError(t, err)
	assert.Nil(t, top[0].EnaSrd)

	for _, bad := range []string{``, `{}`, `{"NetworkInterfaces":{}}`, `[1]`, `{"NetworkInterfaces":[{"MacAddress":1}]}`, `nul`} {
		_, err := ParseNetworkInterfaces(strings.NewReader(bad))
		assert.Error(t, err, bad)
		assert.True(t, strings.HasPrefix(err.Error(), "srd: "), err.Error())
	}
}

func TestParseInstanceTypes(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "describe-instance-types.json"))
	require.NoError(t, err)
	defer f.Close()
	its, err := ParseInstanceTypes(f)
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"c8gn.8xlarge": true, "t4g.large": false}, its)
	_, err = ParseInstanceTypes(strings.NewReader(`{"NetworkInterfaces":[]}`))
	assert.ErrorContains(t, err, "no InstanceTypes key")
}

func TestParseReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := ParseInstanceTypes(iotestErr{boom})
	assert.ErrorIs(t, err, boom)
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }

func FuzzParseNetworkInterfaces(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "describe-network-interfaces.json"))
	require.NoError(f, err)
	f.Add(b)
	f.Add([]byte(`[{"Attachment":{"EnaSrdSpecification":{"EnaSrdUdpSpecification":{"EnaSrdUdpEnabled":true}}}}]`))
	f.Add([]byte(`{"NetworkInterfaces":null}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		nis, err := ParseNetworkInterfaces(strings.NewReader(string(in)))
		if err != nil {
			require.Nil(t, nis)
			return
		}
		for _, ni := range nis {
			if ni.EnaSrd != nil {
				m := *ni.EnaSrd
				require.Zero(t, m&^(expressEnabled|expressUDP), "only the two bits EC2 configures")
			}
		}
	})
}

func FuzzParseInstanceTypes(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "describe-instance-types.json"))
	require.NoError(f, err)
	f.Add(b)
	f.Add([]byte(`[{"InstanceType":"x","NetworkInfo":null}]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		its, err := ParseInstanceTypes(strings.NewReader(string(in)))
		if err != nil {
			require.Nil(t, its)
		}
	})
}

func FuzzModeString(f *testing.F) {
	for _, m := range []uint64{0, 1, 2, 3, 4, 7, 8, 1 << 63} {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, m uint64) {
		s := ExpressMode(m).String()
		require.True(t, strings.HasPrefix(s, "ENA Express "))
		require.Equal(t, ExpressMode(m)&^ExpressMode(7), ExpressMode(m).unknown())
	})
}

func fixture(t testing.TB, name string, at time.Duration) *ethtool.Snapshot {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "ethtool", "testdata", name))
	require.NoError(t, err)
	defer f.Close()
	s, err := ethtool.ParseSnapshot(f)
	require.NoError(t, err)
	s.Interface = "eth0"
	s.Time = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).Add(at)
	return s
}

func TestCoverageE1(t *testing.T) {
	r := Coverage(fixture(t, "ena-2.17-same-az-before.txt", 0), fixture(t, "ena-2.17-same-az-after.txt", 15*time.Second))
	assert.Equal(t, VerdictCarried, r.Verdict)
	assert.Equal(t, uint64(28195047), r.TxPktsDelta)
	assert.Equal(t, uint64(28195063), r.EligibleTxPktsDelta)
	assert.Equal(t, uint64(27991023), r.RxPktsDelta)
	assert.Equal(t, uint64(16), r.FallbackPkts)
	assert.InDelta(t, 28195047.0/28195063.0, r.Coverage, 1e-12)
	assert.Greater(t, r.Coverage, 0.99999)
	assert.Equal(t, ExpressMode(3), r.Mode)
	assert.Equal(t, "ENA Express on, UDP on", r.Mode.String())
	assert.Equal(t, 15*time.Second, r.Duration)
	assert.Equal(t, uint64(1), r.ResourceUtilizationPercent)
	assert.Equal(t, "SRD carried 28195047 of 28195063 eligible packets (99.999943%)", r.Reason)

	r = Coverage(fixture(t, "ena-2.17-cross-az-before.txt", 0), fixture(t, "ena-2.17-cross-az-after.txt", 20*time.Second))
	assert.Equal(t, VerdictCarried, r.Verdict)
	assert.Equal(t, uint64(24534321), r.TxPktsDelta)
	assert.Equal(t, uint64(24534339), r.EligibleTxPktsDelta)

	b, err := json.Marshal(r)
	require.NoError(t, err)
	for _, k := range []string{"srd_mode", "express_enabled", "udp_enabled", "tx_pkts_delta", "eligible_tx_pkts_delta", "rx_pkts_delta", "coverage", "verdict"} {
		assert.Contains(t, string(b), `"`+k+`":`)
	}
	assert.Contains(t, r.String(), "srd_carried_traffic")
	r.Interface = "" // as from a snapshot parsed from `ethtool -S` text
	assert.True(t, strings.HasPrefix(r.String(), "srd_carried_traffic; "), "a report without an interface starts with its verdict: %q", r.String())
	r.Interface = "eth0"
	assert.True(t, strings.HasPrefix(r.String(), "eth0: srd_carried_traffic; "), r.String())
}

func srdSnap(at time.Duration, mode, tx, eligible, rx, util uint64) *ethtool.Snapshot {
	return &ethtool.Snapshot{
		Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(at), Interface: "eth0",
		Stats: ethtool.Stats{
			{Name: "ena_srd_mode", Value: mode}, {Name: "ena_srd_tx_pkts", Value: tx},
			{Name: "ena_srd_eligible_tx_pkts", Value: eligible}, {Name: "ena_srd_rx_pkts", Value: rx},
			{Name: "ena_srd_resource_utilization", Value: util},
		},
	}
}

func TestCoverageVerdicts(t *testing.T) {
	tests := []struct {
		name          string
		before, after *ethtool.Snapshot
		verdict       Verdict
		reason        string
	}{
		{"partial fallback", srdSnap(0, 3, 0, 0, 0, 10), srdSnap(time.Second, 3, 900, 1000, 50, 20), VerdictPartialFallback,
			"100 of 1000 eligible packets (10.000%) fell back to plain ENA: likely packets larger than the SRD MTU"},
		{"fallback from exhaustion", srdSnap(0, 1, 0, 0, 0, 60), srdSnap(time.Second, 1, 500, 1000, 0, 99), VerdictPartialFallback,
			"SRD resources are 99% used"},
		{"fallback when mode changed", srdSnap(0, 1, 0, 0, 0, 0), srdSnap(time.Second, 3, 500, 1000, 0, 0), VerdictPartialFallback,
			"fell back to plain ENA: ena_srd_mode changed from 1 (ENA Express on, UDP off) to 3 (ENA Express on, UDP on) during the window"},
		// ENA Express switched off during the window: the window's SRD
		// traffic is judged, and the reason says the mode changed.
		{"switched off after carrying", srdSnap(0, 3, 0, 0, 0, 0), srdSnap(time.Second, 0, 1000, 1000, 0, 0), VerdictCarried,
			"SRD carried 1000 of 1000 eligible packets (100%); ena_srd_mode changed from 3 (ENA Express on, UDP on) to 0 (ENA Express off, UDP off) during the window, so ENA Express is off now"},
		{"switched off with fallback", srdSnap(0, 3, 0, 0, 0, 0), srdSnap(time.Second, 0, 900, 1000, 0, 0), VerdictPartialFallback,
			"100 of 1000 eligible packets (10.000%) fell back to plain ENA: ena_srd_mode changed from 3"},
		{"switched off under exhaustion", srdSnap(0, 1, 0, 0, 0, 95), srdSnap(time.Second, 2, 900, 1000, 0, 0), VerdictPartialFallback,
			"SRD resources are 95% used, so SRD ran out of connection memory; ena_srd_mode changed from 1"},
		{"switched off without traffic", srdSnap(0, 3, 5, 5, 0, 0), srdSnap(time.Second, 0, 5, 5, 0, 0), VerdictDisabled, "ena_srd_mode is 0"},
		{"switched on after carrying", srdSnap(0, 0, 0, 0, 0, 0), srdSnap(time.Second, 1, 10, 10, 0, 0), VerdictCarried, "; ena_srd_mode changed from 0"},
		{"tx above eligible", srdSnap(0, 3, 0, 0, 0, 0), srdSnap(time.Second, 3, 10, 5, 0, 0), VerdictInconsistent,
			"ena_srd_tx_pkts grew by 10 but ena_srd_eligible_tx_pkts only by 5"},
		{"tx without eligible", srdSnap(0, 0, 0, 0, 0, 0), srdSnap(time.Second, 0, 10, 0, 0, 0), VerdictInconsistent, "take both snapshots again"},
		{"no eligible counter", &ethtool.Snapshot{Stats: ethtool.Stats{{Name: "ena_srd_mode", Value: 1}, {Name: "ena_srd_tx_pkts"}}},
			&ethtool.Snapshot{Stats: ethtool.Stats{{Name: "ena_srd_mode", Value: 1}, {Name: "ena_srd_tx_pkts", Value: 500}}}, VerdictNoStatistics, "in either snapshot"},
		{"disabled", srdSnap(0, 0, 5, 5, 5, 0), srdSnap(time.Second, 0, 5, 5, 5, 0), VerdictDisabled, "ena_srd_mode is 0 (ENA Express off, UDP off)"},
		{"mode 2 is disabled", srdSnap(0, 2, 5, 5, 5, 0), srdSnap(time.Second, 2, 5, 5, 5, 0), VerdictDisabled, "ena_srd_mode is 2"},
		{"reset", srdSnap(0, 3, 1000, 1000, 1000, 0), srdSnap(time.Second, 3, 10, 10, 2000, 0), VerdictCountersReset,
			"ena_srd_tx_pkts, ena_srd_eligible_tx_pkts went backwards"},
		{"no traffic", srdSnap(0, 3, 7, 7, 7, 0), srdSnap(time.Second, 3, 7, 7, 9, 0), VerdictNoTraffic, "no packet eligible"},
		{"no stats before", &ethtool.Snapshot{Stats: ethtool.Stats{{Name: "tx_timeout"}}}, srdSnap(0, 3, 1, 1, 1, 0), VerdictNoStatistics, "in the first snapshot"},
		{"no stats after", srdSnap(0, 3, 1, 1, 1, 0), &ethtool.Snapshot{Stats: ethtool.Stats{{Name: "peer_ifindex", Value: 2}}}, VerdictNoStatistics, "in the second snapshot"},
		{"no stats at all", &ethtool.Snapshot{}, &ethtool.Snapshot{}, VerdictNoStatistics, "in either snapshot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Coverage(tt.before, tt.after)
			assert.Equal(t, tt.verdict, r.Verdict)
			assert.Contains(t, r.Reason, tt.reason)
			assert.GreaterOrEqual(t, r.Coverage, 0.0)
			assert.LessOrEqual(t, r.Coverage, 1.0)
			if tt.verdict == VerdictCountersReset {
				assert.Zero(t, r.TxPktsDelta, "never a wrapped number")
				assert.Zero(t, r.RxPktsDelta)
			}
			if tt.verdict == VerdictInconsistent {
				assert.False(t, r.HasSRD())
				assert.Equal(t, "-", r.Percent(), "never above 100%")
				assert.NotContains(t, r.Reason, "carried")
			}
		})
	}
}

func TestReadinessReadyHost(t *testing.T) {
	checks, err := Readiness("eth0", &ReadinessConfig{
		Root: filepath.Join("testdata", "host-ready"), HighRTT: true,
		rings: func(string) (ethtool.RingParams, error) {
			return ethtool.RingParams{Rx: 8192, RxMax: 16384, Tx: 1024, TxMax: 1024}, nil
		},
	})
	require.NoError(t, err)
	require.Len(t, checks, 14)
	for _, c := range checks {
		assert.Equal(t, StatusPass, c.Status, "%+v", c)
	}
	assert.Equal(t, StatusPass, worst(checks))
	assert.Equal(t, Check{Name: "mtu", Value: "8900", Expect: "<= 8900", Status: StatusPass, Required: true}, checks[0])
	assert.Equal(t, "disabled on 2 TX queues", checks[2].Value)
}

func TestReadinessDefaultHost(t *testing.T) {
	checks, err := Readiness("eth0", &ReadinessConfig{
		Root: filepath.Join("testdata", "host-default"),
		rings: func(string) (ethtool.RingParams, error) {
			return ethtool.RingParams{Rx: 1024, RxMax: 16384, Tx: 512, TxMax: 1024}, nil
		},
	})
	require.NoError(t, err)
	byName := map[string]Check{}
	for _, c := range checks {
		byName[c.Name] = c
	}
	assert.Equal(t, StatusFail, byName["mtu"].Status)
	assert.Equal(t, "9001", byName["mtu"].Value)
	assert.Equal(t, StatusPass, byName["net.ipv4.tcp_limit_output_bytes"].Status, "1 MiB is enough without HighRTT")
	assert.Equal(t, StatusFail, byName["byte queue limits (BQL)"].Status)
	assert.Equal(t, "active (limit_min tx-0=0)", byName["byte queue limits (BQL)"].Value)
	assert.Equal(t, StatusWarn, byName["net.ipv4.tcp_autocorking"].Status)
	assert.Equal(t, StatusWarn, byName["tx ring size"].Status)
	assert.Equal(t, "512 (max 1024)", byName["tx ring size"].Value)
	assert.Contains(t, byName["tx ring size"].Detail, "ethtool -G eth0 to 1024")
	assert.Equal(t, StatusWarn, byName["rx ring size"].Status)
	assert.Equal(t, StatusWarn, byName["net.ipv4.tcp_rmem max"].Status)
	assert.Equal(t, "6291456", byName["net.ipv4.tcp_rmem max"].Value)
	assert.Equal(t, StatusWarn, byName["net.core.rmem_max"].Status)
	assert.Equal(t, StatusWarn, byName["net.ipv4.tcp_congestion_control"].Status)
	assert.Equal(t, "bbr", byName["net.ipv4.tcp_congestion_control"].Value)
	assert.Equal(t, StatusWarn, byName["tcp_cubic hystart_detect"].Status)
	assert.Equal(t, StatusFail, worst(checks))

	checks, err = Readiness("eth0", &ReadinessConfig{Root: filepath.Join("testdata", "host-default"), HighRTT: true,
		rings: func(string) (ethtool.RingParams, error) { return ethtool.RingParams{}, os.ErrNotExist }})
	require.NoError(t, err)
	for _, c := range checks {
		if c.Name == "net.ipv4.tcp_limit_output_bytes" {
			assert.Equal(t, StatusFail, c.Status)
			assert.Equal(t, ">= 4194304", c.Expect)
		}
		if strings.HasSuffix(c.Name, "ring size") {
			assert.Equal(t, StatusWarn, c.Status)
			assert.Equal(t, "unreadable", c.Value)
		}
	}
}

func TestReadinessMissing(t *testing.T) {
	_, err := Readiness("eth9", &ReadinessConfig{Root: filepath.Join("testdata", "host-ready")})
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = Readiness("../x", nil)
	assert.ErrorIs(t, err, os.ErrNotExist)

	// An interface directory with nothing but its ifindex: every check
	// warns, none errors.
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sys", "class", "net", "eth0"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sys", "class", "net", "eth0", "ifindex"), []byte("2\n"), 0o644))
	checks, err := Readiness("eth0", &ReadinessConfig{Root: root, rings: func(string) (ethtool.RingParams, error) { return ethtool.RingParams{}, errors.New("no") }})
	require.NoError(t, err)
	for _, c := range checks {
		assert.Equal(t, StatusWarn, c.Status, c.Name)
		assert.Equal(t, "unreadable", c.Value, c.Name)
		assert.NotEmpty(t, c.Detail, c.Name)
	}
}

func TestReadinessInvalidInterfaceNames(t *testing.T) {
	// "." and ".." would name sys/class/net and sys/class themselves.
	ready := &ReadinessConfig{Root: filepath.Join("testdata", "host-ready"),
		rings: func(string) (ethtool.RingParams, error) { return ethtool.RingParams{}, os.ErrNotExist }}
	for _, iface := range []string{"", ".", "..", "../eth0", "eth0/", "eth0:1", "eth 0", "a23456789012345x", "x\x00"} {
		checks, err := Readiness(iface, ready)
		assert.ErrorIs(t, err, os.ErrNotExist, "%q", iface)
		assert.ErrorContains(t, err, "srd: readiness: invalid interface name", "%q", iface)
		assert.Nil(t, checks, "%q", iface)
	}
	_, err := Readiness("a23456789012345", ready)
	assert.ErrorIs(t, err, os.ErrNotExist, "15 bytes is a valid name, but there is no such interface")
	assert.NotContains(t, err.Error(), "invalid interface name")
}

func TestReadinessNeedsAnInterfaceDirectory(t *testing.T) {
	root := t.TempDir()
	classNet := filepath.Join(root, "sys", "class", "net")
	// A directory that is not an interface's (no ifindex), and a file
	// (sysfs has bonding_masters there).
	require.NoError(t, os.MkdirAll(filepath.Join(classNet, "notif"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(classNet, "bonding_masters"), []byte("\n"), 0o644))
	cfg := &ReadinessConfig{Root: root, rings: func(string) (ethtool.RingParams, error) { return ethtool.RingParams{}, os.ErrNotExist }}
	_, err := Readiness("notif", cfg)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.ErrorContains(t, err, "is not a network interface")
	_, err = Readiness("bonding_masters", cfg)
	assert.ErrorIs(t, err, os.ErrNotExist)

	// A path component that is a file (ENOTDIR) is no interface either.
	_, err = Readiness("eth0", &ReadinessConfig{Root: filepath.Join(classNet, "bonding_masters"), rings: cfg.rings})
	assert.ErrorIs(t, err, os.ErrNotExist)

	// An interface directory that cannot be read matches os.ErrPermission.
	if os.Geteuid() == 0 {
		t.Skip("running as root, which reads any directory: cannot test EACCES")
	}
	locked := filepath.Join(classNet, "eth1")
	require.NoError(t, os.MkdirAll(locked, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(locked, "ifindex"), []byte("3\n"), 0o644))
	require.NoError(t, os.Chmod(locked, 0))
	t.Cleanup(func() { _ = os.Chmod(locked, 0o755) })
	_, err = Readiness("eth1", cfg)
	assert.ErrorIs(t, err, os.ErrPermission)
	assert.ErrorContains(t, err, "srd: readiness: interface eth1")
}

func TestReadinessThisHost(t *testing.T) {
	if _, err := os.Stat("/sys/class/net/lo"); err != nil {
		t.Skip("no /sys/class/net/lo on this system")
	}
	checks, err := Readiness("lo", nil)
	require.NoError(t, err)
	require.Len(t, checks, 14)
	mtu, err := os.ReadFile("/sys/class/net/lo/mtu")
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(mtu)), checks[0].Value)
	assert.Equal(t, StatusFail, checks[0].Status, "lo's MTU of 65536 is above 8900")
}

func TestSpecCheck(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "describe-network-interfaces.json"))
	require.NoError(t, err)
	defer f.Close()
	nis, err := ParseNetworkInterfaces(f)
	require.NoError(t, err)

	ni := findByMAC(nis, "0E:12:34:56:78:9A\n")
	require.NotNil(t, ni)
	assert.Equal(t, "eni-0f1e2d3c4b5a69788", ni.ID)
	assert.Nil(t, findByMAC(nis, "00:00:00:00:00:01"))
	assert.Nil(t, findByMAC(nis, ""))

	c := specCheckMode(ni, 3)
	assert.Equal(t, StatusPass, c.Status)
	assert.Equal(t, "3 (ENA Express on, UDP on)", c.Value)
	assert.Equal(t, "3 (ENA Express on, UDP on) as eni-0f1e2d3c4b5a69788's EnaSrdSpecification says", c.Expect)
	assert.Equal(t, StatusPass, specCheckMode(ni, 7).Status, "the ordering bypass bit is not part of the spec")
	assert.Equal(t, StatusFail, specCheckMode(ni, 1).Status)
	assert.Equal(t, StatusFail, specCheckMode(ni, 0).Status)

	none := SpecCheck(nis, "0E:12:34:56:78:9A\n", CoverageReport{Verdict: VerdictNoStatistics, Reason: "no ena_srd_* statistics"})
	assert.Equal(t, Check{Name: "EnaSrdSpecification vs ena_srd_mode", Value: "no ena_srd_mode",
		Expect: "ENA statistics with SRD information", Status: StatusWarn, Detail: "no ena_srd_* statistics"}, none)
	assert.Equal(t, specCheckMode(ni, 3), SpecCheck(nis, "0e:12:34:56:78:9a", CoverageReport{Verdict: VerdictCarried, Mode: 3}))

	off := findByMAC(nis, "0e:12:34:56:78:9b")
	require.NotNil(t, off)
	assert.Equal(t, StatusPass, specCheckMode(off, 0).Status)
	assert.Equal(t, StatusPass, specCheckMode(off, 2).Status, "UDP left on after Express was turned off")
	assert.Equal(t, StatusFail, specCheckMode(off, 1).Status)

	assert.Equal(t, StatusWarn, specCheckMode(nil, 3).Status)
	assert.Equal(t, StatusWarn, specCheckMode(&nis[2], 3).Status)
}

func TestNumberChecks(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	c := lastFieldCheck("rmem", file("two", "4096 131072\n"), 100)
	assert.Equal(t, "unreadable", c.Value)
	assert.Equal(t, StatusWarn, c.Status)
	assert.Contains(t, c.Detail, "want three numbers")

	c = lastFieldCheck("rmem", file("nan", "4096 131072 lots\n"), 100)
	assert.Equal(t, "unreadable", c.Value)
	assert.Contains(t, c.Detail, `"lots" is not a number`)

	c = lastFieldCheck("rmem", file("low", "4096 131072 99\n"), 100)
	assert.Equal(t, Check{Name: "rmem", Value: "99", Expect: ">= 100", Status: StatusWarn, Detail: bufWhy}, c)

	c = intCheck("mtu", file("mtu", "9001\n"), "<= 8900", true, func(v int64) bool { return v <= 8900 }, "too big")
	assert.Equal(t, Check{Name: "mtu", Value: "9001", Expect: "<= 8900", Status: StatusFail, Required: true, Detail: "too big"}, c)

	c = intCheck("mtu", filepath.Join(dir, "missing"), "<= 8900", true, func(int64) bool { return true }, "")
	assert.Equal(t, "unreadable", c.Value)
	assert.True(t, c.Required)
}
