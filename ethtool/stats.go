package ethtool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// maxNameLen is the longest statistic name the kernel can report
// (ETH_GSTRING_LEN).
const maxNameLen = 32

// maxStats is the most statistics one interface is taken to have: a count
// above it from a driver is nonsensical, and the parsers reject input with
// more. ENA with 32 queues has about 800.
const maxStats = 1 << 16

// nameProblem says what makes name unfit as a statistic name, "" when
// nothing does: the rules ParseSnapshot's text reading applies, so that a name accepted
// anywhere prints as a line ParseSnapshot reads back (see Snapshot.WriteText).
func nameProblem(name []byte) string {
	switch {
	case len(name) == 0:
		return "empty statistic name"
	case len(name) > maxNameLen:
		return fmt.Sprintf("statistic name longer than %d bytes", maxNameLen)
	case !utf8.Valid(name):
		return "statistic name is not valid UTF-8"
	case len(bytes.TrimSpace(name)) != len(name):
		return "statistic name starts or ends with white space"
	case bytes.IndexByte(name, '\n') >= 0:
		return "statistic name holds a line break"
	}
	return ""
}

// Stat is one named driver statistic.
type Stat struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// Stats is a list of statistics in the order the driver reports them. Look
// values up by name: the order changes between drivers and versions. A driver
// may in rare cases report a name twice; all entries are kept and Get returns
// the first.
//
// Stats marshals to JSON as an object {name: value, ...} in driver order.
type Stats []Stat

// Get returns the value of the statistic called name and whether it exists.
func (s Stats) Get(name string) (uint64, bool) {
	for i := range s {
		if s[i].Name == name {
			return s[i].Value, true
		}
	}
	return 0, false
}

// clone returns a copy that shares nothing with s.
func (s Stats) clone() Stats {
	if s == nil {
		return nil
	}
	return append(Stats(nil), s...)
}

// MarshalJSON writes {"name": value, ...} in driver order with values as
// JSON numbers.
func (s Stats) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("{}"), nil
	}
	b := make([]byte, 0, 2+len(s)*40)
	b = append(b, '{')
	for i, st := range s {
		if i > 0 {
			b = append(b, ',')
		}
		name, err := json.Marshal(st.Name)
		if err != nil {
			return nil, err
		}
		b = append(b, name...)
		b = append(b, ':')
		b = strconv.AppendUint(b, st.Value, 10)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads the object form written by MarshalJSON, keeping the
// order of the keys. Names must follow the text rules of ParseSnapshot (1 to 32 bytes of
// UTF-8, no white space at either end, no line break), and there may be at
// most 65536 statistics.
func (s *Stats) UnmarshalJSON(data []byte) error {
	if s == nil {
		return errors.New("ethtool: Stats.UnmarshalJSON: nil *Stats")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("ethtool: stats JSON: %w", err)
	}
	if tok == nil {
		*s = nil
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("ethtool: stats JSON: want an object, got %v", tok)
	}
	out := Stats{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("ethtool: stats JSON: %w", err)
		}
		name, _ := tok.(string)
		if why := nameProblem([]byte(name)); why != "" {
			return fmt.Errorf("ethtool: stats JSON: %q: %s", name, why)
		}
		if len(out) == maxStats {
			return fmt.Errorf("ethtool: stats JSON: more than %d statistics", maxStats)
		}
		tok, err = dec.Token()
		if err != nil {
			return fmt.Errorf("ethtool: stats JSON: %w", err)
		}
		num, ok := tok.(json.Number)
		if !ok {
			return fmt.Errorf("ethtool: stats JSON: %q: want a number, got %v", name, tok)
		}
		v, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil {
			return fmt.Errorf("ethtool: stats JSON: %q: %w", name, err)
		}
		out = append(out, Stat{Name: name, Value: v})
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("ethtool: stats JSON: %w", err)
	}
	*s = out
	return nil
}
