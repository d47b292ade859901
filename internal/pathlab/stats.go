package pathlab

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
)

// QdiscStats are a qdisc's counters (tc -s qdisc).
type QdiscStats struct {
	Kind       string `json:"kind"`
	Bytes      int64  `json:"bytes"`
	Packets    int64  `json:"packets"`
	Drops      int64  `json:"drops"`
	Overlimits int64  `json:"overlimits"`
}

// Qdisc returns the counters of the root qdisc on h.Dev.
func (h *Host) Qdisc(tb testing.TB) QdiscStats {
	tb.Helper()
	out := h.Run(tb, h.tc, "-s", "-j", "qdisc", "show", "dev", h.Dev)
	q, err := parseQdisc(strings.NewReader(out))
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return q
}

// parseQdisc reads tc -s -j qdisc show's JSON and returns the root qdisc's
// counters.
func parseQdisc(r io.Reader) (QdiscStats, error) {
	var qs []struct {
		QdiscStats
		Root bool `json:"root"`
	}
	if err := json.NewDecoder(r).Decode(&qs); err != nil {
		return QdiscStats{}, fmt.Errorf("pathlab: tc qdisc JSON: %w", err)
	}
	for _, q := range qs {
		if q.Root {
			return q.QdiscStats, nil
		}
	}
	return QdiscStats{}, fmt.Errorf("pathlab: tc qdisc JSON: no root qdisc in %d", len(qs))
}

// SNMP returns h's namespace's /proc/net/snmp counters keyed as nstat
// names them ("UdpSndbufErrors", "UdpOutDatagrams", "TcpRetransSegs").
func (h *Host) SNMP(tb testing.TB) map[string]int64 {
	tb.Helper()
	return h.counters(tb, "/proc/net/snmp")
}

// Netstat returns h's namespace's /proc/net/netstat counters keyed as
// nstat names them ("TcpExtListenDrops", "TcpExtTCPTimeouts").
func (h *Host) Netstat(tb testing.TB) map[string]int64 {
	tb.Helper()
	return h.counters(tb, "/proc/net/netstat")
}

// counters reads one of the namespace's counter files in parseSNMP's form.
func (h *Host) counters(tb testing.TB, path string) map[string]int64 {
	tb.Helper()
	m, err := parseSNMP(strings.NewReader(h.Run(tb, "cat", path)))
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return m
}

// parseSNMP reads /proc/net/snmp or /proc/net/netstat: pairs of lines, a
// header of names and a line of values, each led by the protocol.
func parseSNMP(r io.Reader) (map[string]int64, error) {
	m := map[string]int64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		names := strings.Fields(sc.Text())
		if !sc.Scan() {
			return nil, fmt.Errorf("pathlab: snmp: header %q without values", names)
		}
		vals := strings.Fields(sc.Text())
		if len(names) == 0 || len(vals) != len(names) || vals[0] != names[0] {
			return nil, fmt.Errorf("pathlab: snmp: %d names and %d values", len(names), len(vals))
		}
		if !strings.HasSuffix(names[0], ":") {
			return nil, fmt.Errorf("pathlab: snmp: line %q does not start with a protocol (\"Udp:\")", names[0])
		}
		proto := strings.TrimSuffix(names[0], ":")
		for i := 1; i < len(names); i++ {
			v, err := strconv.ParseInt(vals[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("pathlab: snmp %s%s: %w", proto, names[i], err)
			}
			m[proto+names[i]] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("pathlab: snmp: %w", err)
	}
	return m, nil
}
