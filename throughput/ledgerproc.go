package throughput

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The kernel's text files the loss ledger reads. Each parser only parses
// (the reading is in ledgerread_linux.go), checks every line's length
// before indexing, and returns an error rather than a guess.

var errProcFormat = errors.New("throughput: unexpected /proc format")

// parseSNMP reads /proc/net/snmp (pairs of lines, a header of names and a
// line of values, each led by the protocol: "Udp: InDatagrams ...") or
// /proc/net/snmp6 (one "Udp6RcvbufErrors 0" pair a line), keyed as nstat
// names them: "UdpRcvbufErrors", "IpReasmFails", "Udp6RcvbufErrors".
func parseSNMP(r io.Reader) (map[string]int64, error) {
	m := map[string]int64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		names := strings.Fields(sc.Text())
		switch {
		case len(names) == 0:
			continue
		case len(names) == 2 && !strings.HasSuffix(names[0], ":"):
			v, err := strconv.ParseInt(names[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: snmp6 %s: %v", errProcFormat, names[0], err)
			}
			m[names[0]] = v
			continue
		case !strings.HasSuffix(names[0], ":"):
			return nil, fmt.Errorf("%w: snmp line %.40q does not start with a protocol", errProcFormat, sc.Text())
		}
		if !sc.Scan() {
			return nil, fmt.Errorf("%w: snmp header %s without values", errProcFormat, names[0])
		}
		vals := strings.Fields(sc.Text())
		if len(vals) != len(names) || vals[0] != names[0] {
			return nil, fmt.Errorf("%w: snmp %s: %d names and %d values", errProcFormat, names[0], len(names), len(vals))
		}
		proto := strings.TrimSuffix(names[0], ":")
		for i := 1; i < len(names); i++ {
			v, err := strconv.ParseInt(vals[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: snmp %s%s: %v", errProcFormat, proto, names[i], err)
			}
			m[proto+names[i]] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("throughput: snmp: %w", err)
	}
	return m, nil
}

// netDevDrops are one interface's drop counters in /proc/net/dev.
type netDevDrops struct {
	RxDrop, TxDrop int64
}

// parseNetDev reads /proc/net/dev: two header lines, then "iface: " and
// eight receive and eight transmit counters; drop is the fourth of each
// (rx drop is the driver's rx_dropped plus rx_missed_errors).
func parseNetDev(r io.Reader) (map[string]netDevDrops, error) {
	m := map[string]netDevDrops{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.Contains(name, "|") {
			continue // a header line
		}
		f := strings.Fields(rest)
		if len(f) < 16 {
			return nil, fmt.Errorf("%w: net/dev %s: %d fields, want 16", errProcFormat, strings.TrimSpace(name), len(f))
		}
		var d netDevDrops
		for i, dst := range map[int]*int64{3: &d.RxDrop, 11: &d.TxDrop} {
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: net/dev %s: %v", errProcFormat, strings.TrimSpace(name), err)
			}
			*dst = v
		}
		m[strings.TrimSpace(name)] = d
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("throughput: net/dev: %w", err)
	}
	return m, nil
}

// parseSoftnet reads /proc/net/softnet_stat, one line of hexadecimal
// counters per CPU, and sums the second: packets dropped because the CPU's
// backlog queue was full.
func parseSoftnet(r io.Reader) (int64, error) {
	var sum int64
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 {
			return 0, fmt.Errorf("%w: softnet_stat line %d: %d fields", errProcFormat, n, len(f))
		}
		v, err := strconv.ParseUint(f[1], 16, 32)
		if err != nil {
			return 0, fmt.Errorf("%w: softnet_stat line %d: %v", errProcFormat, n, err)
		}
		sum += int64(v)
		n++
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("throughput: softnet_stat: %w", err)
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: softnet_stat is empty", errProcFormat)
	}
	return sum, nil
}

// parseConntrackStat reads /proc/net/stat/nf_conntrack, a header of field
// names and one line of hexadecimal counters per CPU, and sums the fields
// that count packets conntrack dropped: drop, early_drop, insert_failed.
func parseConntrackStat(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	if !sc.Scan() {
		return 0, fmt.Errorf("%w: nf_conntrack stat is empty", errProcFormat)
	}
	var cols []int
	for i, name := range strings.Fields(sc.Text()) {
		if name == "drop" || name == "early_drop" || name == "insert_failed" {
			cols = append(cols, i)
		}
	}
	if len(cols) == 0 {
		return 0, fmt.Errorf("%w: nf_conntrack stat has no drop column", errProcFormat)
	}
	var sum int64
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		for _, c := range cols {
			if c >= len(f) {
				return 0, fmt.Errorf("%w: nf_conntrack stat: %d fields, want %d", errProcFormat, len(f), c+1)
			}
			v, err := strconv.ParseUint(f[c], 16, 32)
			if err != nil {
				return 0, fmt.Errorf("%w: nf_conntrack stat: %v", errProcFormat, err)
			}
			sum += int64(v)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("throughput: nf_conntrack stat: %w", err)
	}
	return sum, nil
}
