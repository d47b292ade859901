package ethtool

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
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

// Clone returns a deep copy of s; nil for a nil s.
func (s *Snapshot) Clone() *Snapshot {
	if s == nil {
		return nil
	}
	c := *s
	c.Stats = s.Stats.clone()
	return &c
}

// maxSnapshotJSON is the most bytes ParseSnapshot reads of a JSON snapshot:
// room for 65536 statistics with the longest names escaped, indented. A
// 335-statistic ENA snapshot takes about 12 KiB.
const maxSnapshotJSON = 32 << 20

// ParseSnapshot reads a snapshot saved either as the JSON of a Snapshot or as
// `ethtool -S` text; text gives a Snapshot with only Stats set. The text is
// what `ethtool -S IFACE` prints: an optional "NIC statistics:" header, then
// one "name: value" line per statistic with any leading spaces or tabs.
// Names may contain spaces and colons (the value follows the last colon)
// and are at most 32 bytes; values are unsigned 64-bit decimals; names must
// be valid UTF-8. Blank lines are ignored and unknown names are kept. A
// malformed line gives an error naming its line number ("ethtool: line 3:
// ...", counted from the start of r), and so does the statistic past the
// 65536th: no interface has that many, so the input is not `ethtool -S`
// output. Text that holds no statistic, including ethtool's "no stats
// available", gives an error matching ErrNoStats and os.ErrNotExist. A nil
// r is an error, and so is JSON that is malformed, larger than 32 MiB,
// followed by anything but white space, or holding more than 65536
// statistics or a name the text rules reject. JSON without statistics gives an error matching
// ErrNoStats. The Snapshot is never nil: after an error it is empty.
func ParseSnapshot(r io.Reader) (*Snapshot, error) {
	if r == nil {
		return &Snapshot{}, errors.New("ethtool: ParseSnapshot: nil io.Reader r")
	}
	br := bufio.NewReader(r)
	skipped := 0 // lines consumed before the text starts
	for {
		b, err := br.Peek(1)
		if err != nil || len(b) == 0 {
			break
		}
		if b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r' {
			if b[0] == '\n' {
				skipped++
			}
			_, _ = br.ReadByte()
			continue
		}
		if b[0] == '{' {
			return parseSnapshotJSON(br)
		}
		break
	}
	st, err := parseText(br, skipped)
	if err != nil {
		return &Snapshot{}, err
	}
	return &Snapshot{Stats: st}, nil
}

// parseSnapshotJSON reads a JSON snapshot; after an error the Snapshot is
// empty, never nil.
func parseSnapshotJSON(r io.Reader) (*Snapshot, error) {
	s, err := decodeSnapshotJSON(r)
	if err != nil {
		return &Snapshot{}, fmt.Errorf("ethtool: snapshot JSON: %w", err)
	}
	return s, nil
}

func decodeSnapshotJSON(r io.Reader) (*Snapshot, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxSnapshotJSON+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSnapshotJSON {
		return nil, fmt.Errorf("larger than %d bytes", maxSnapshotJSON)
	}
	var s Snapshot
	// Unmarshal, unlike a Decoder, rejects anything after the value.
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	if len(s.Stats) == 0 {
		return nil, ErrNoStats
	}
	return &s, nil
}

// WriteText writes the statistics the way `ethtool -S` prints them, so that
// ParseSnapshot reads them back. A name the text rules reject (which
// ParseSnapshot never returns) gives an error and nothing is
// written, and so do a nil s and a nil w.
func (s *Snapshot) WriteText(w io.Writer) error {
	if s == nil {
		return errors.New("ethtool: WriteText: nil *Snapshot")
	}
	if w == nil {
		return errors.New("ethtool: WriteText: nil io.Writer w")
	}
	var b bytes.Buffer
	b.WriteString("NIC statistics:\n")
	for _, st := range s.Stats {
		if why := nameProblem([]byte(st.Name)); why != "" {
			return fmt.Errorf("ethtool: write text: %q: %s", st.Name, why)
		}
		fmt.Fprintf(&b, "     %s: %d\n", st.Name, st.Value)
	}
	_, err := w.Write(b.Bytes())
	return err
}
