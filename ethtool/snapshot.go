package ethtool

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Snapshot is the statistics of one interface at one time.
type Snapshot struct {
	Time            time.Time `json:"time"`
	Interface       string    `json:"interface"`
	Driver          string    `json:"driver"`
	DriverVersion   string    `json:"driver_version,omitempty"`
	FirmwareVersion string    `json:"firmware_version,omitempty"`
	BusInfo         string    `json:"bus_info,omitempty"`
	Stats           Stats     `json:"stats"`
}

// Clone returns a deep copy of s.
func (s *Snapshot) Clone() *Snapshot {
	c := *s
	c.Stats = s.Stats.clone()
	return &c
}

// ParseSnapshot reads a snapshot saved either as the JSON of a Snapshot or as
// `ethtool -S` text; text gives a Snapshot with only Stats set. It returns the
// errors of ParseText, or a JSON syntax error.
func ParseSnapshot(r io.Reader) (*Snapshot, error) {
	br := bufio.NewReader(r)
	for {
		b, err := br.Peek(1)
		if err != nil || len(b) == 0 {
			break
		}
		if b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r' {
			_, _ = br.ReadByte()
			continue
		}
		if b[0] == '{' {
			var s Snapshot
			dec := json.NewDecoder(br)
			if err := dec.Decode(&s); err != nil {
				return nil, fmt.Errorf("ethtool: snapshot JSON: %w", err)
			}
			if len(s.Stats) == 0 {
				return nil, fmt.Errorf("ethtool: snapshot JSON: %w", ErrNoStats)
			}
			return &s, nil
		}
		break
	}
	st, err := ParseText(br)
	if err != nil {
		return nil, err
	}
	return &Snapshot{Stats: st}, nil
}

// WriteText writes the statistics the way `ethtool -S` prints them, so that
// ParseText reads them back.
func (s *Snapshot) WriteText(w io.Writer) error {
	var b bytes.Buffer
	b.WriteString("NIC statistics:\n")
	for _, st := range s.Stats {
		fmt.Fprintf(&b, "     %s: %d\n", st.Name, st.Value)
	}
	_, err := w.Write(b.Bytes())
	return err
}
