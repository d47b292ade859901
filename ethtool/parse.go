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

// ParseText parses the text `ethtool -S IFACE` prints: an optional
// "NIC statistics:" header, then one "name: value" line per statistic with
// any leading spaces or tabs. Names may contain spaces and colons (the value
// follows the last colon) and are at most MaxNameLen bytes; values are
// unsigned 64-bit decimals. Blank lines are ignored and unknown names are
// kept. A malformed line gives a *ParseError naming its line number. Input
// that holds no statistic, including ethtool's "no stats available", gives an
// error matching ErrNoStats and os.ErrNotExist.
func ParseText(r io.Reader) (Stats, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), maxLine)
	var out Stats
	line, seen := 0, false
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
		st, reason := parseLine(b)
		if reason != "" {
			return nil, &ParseError{Line: line, Text: cut(sc.Text(), 64), Reason: reason}
		}
		out = append(out, st)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &ParseError{Line: line + 1, Reason: fmt.Sprintf("line longer than %d bytes", maxLine)}
		}
		return nil, fmt.Errorf("ethtool: reading statistics: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("ethtool: %w in input", ErrNoStats)
	}
	return out, nil
}

// parseLine parses one trimmed "name: value" line, returning a reason when it
// is malformed.
func parseLine(b []byte) (Stat, string) {
	i := bytes.LastIndexByte(b, ':')
	if i < 0 {
		return Stat{}, "no ':' between name and value"
	}
	name := bytes.TrimSpace(b[:i])
	val := bytes.TrimSpace(b[i+1:])
	switch {
	case len(name) == 0:
		return Stat{}, "empty statistic name"
	case len(name) > MaxNameLen:
		return Stat{}, fmt.Sprintf("statistic name longer than %d bytes", MaxNameLen)
	case len(val) == 0:
		return Stat{}, "missing value"
	}
	v, err := strconv.ParseUint(string(val), 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return Stat{}, "value does not fit in 64 bits"
		}
		return Stat{}, "value is not an unsigned decimal number"
	}
	return Stat{Name: string(name), Value: v}, ""
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
