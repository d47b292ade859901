package ethtool

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxLine bounds one input line; anything longer is not ethtool output.
const maxLine = 4096

// parseStats parses the text `ethtool -S IFACE` prints (ParseSnapshot
// reads it, or a Snapshot's JSON): an optional
// "NIC statistics:" header, then one "name: value" line per statistic with
// any leading spaces or tabs. Names may contain spaces and colons (the value
// follows the last colon) and are at most 32 bytes; values are unsigned
// 64-bit decimals; names must be valid UTF-8. Blank lines are ignored and
// unknown names are kept. A malformed line gives an error naming its line
// number ("ethtool: line 3: ..."), and so does the statistic past the
// 65536th: no interface has that many, so the input is not `ethtool -S`
// output. Input that holds no statistic, including ethtool's "no stats
// available", gives an error matching ErrNoStats and os.ErrNotExist; a nil
// r gives an error.
func parseStats(r io.Reader) (Stats, error) {
	if r == nil {
		return nil, errors.New("ethtool: parse: nil io.Reader r")
	}
	return parseText(r, 0)
}

// parseText is parseStats for input whose first skipped lines were already
// consumed, so that line numbers count from the true start.
func parseText(r io.Reader, skipped int) (Stats, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), maxLine)
	// Names are gathered in one buffer and become one string at the end,
	// which the Stats slice; a 335-line ENA output then costs a handful
	// of allocations instead of one per statistic.
	var (
		out   Stats
		names []byte
		ends  []int
	)
	line, seen := skipped, false
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		first := !seen
		seen = true
		if first && bytes.Equal(b, []byte("NIC statistics:")) {
			continue
		}
		if first && bytes.Equal(b, []byte("no stats available")) {
			return nil, fmt.Errorf("ethtool: %w (input says %q)", ErrNoStats, b)
		}
		name, v, reason := parseLine(b)
		if reason == "" && len(out) == maxStats {
			reason = fmt.Sprintf("more than %d statistics", maxStats)
		}
		if reason != "" {
			return nil, &parseError{Line: line, Text: cut(sc.Text(), 64), Reason: reason}
		}
		names = append(names, name...)
		ends = append(ends, len(names))
		out = append(out, Stat{Value: v})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &parseError{Line: line + 1, Reason: fmt.Sprintf("line longer than %d bytes", maxLine)}
		}
		return nil, fmt.Errorf("ethtool: reading statistics: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("ethtool: %w in input", ErrNoStats)
	}
	all, start := string(names), 0
	for i, end := range ends {
		out[i].Name = all[start:end]
		start = end
	}
	return out, nil
}

// parseLine parses one trimmed "name: value" line, returning a reason when it
// is malformed. name aliases b.
func parseLine(b []byte) (name []byte, v uint64, reason string) {
	i := bytes.LastIndexByte(b, ':')
	if i < 0 {
		return nil, 0, "no ':' between name and value"
	}
	name = bytes.TrimSpace(b[:i])
	val := bytes.TrimSpace(b[i+1:])
	if why := nameProblem(name); why != "" {
		return nil, 0, why
	}
	if len(val) == 0 {
		return nil, 0, "missing value"
	}
	v, err := strconv.ParseUint(string(val), 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return nil, 0, "value does not fit in 64 bits"
		}
		return nil, 0, "value is not an unsigned decimal number"
	}
	return name, v, ""
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
