package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
)

// File is docs/anchors.json: one entry per anchor, in the order of the
// anchor table; a pass of some anchors replaces only their entries.
type File struct {
	Note    string   `json:"note"`
	Anchors []*Entry `json:"anchors"`
}

// Status values of an Entry.
const (
	statusMeasured = "measured" // the rounds ran on a machine quiet enough to judge
	statusBusy     = "busy"     // too busy to judge: no median is written
	statusSkipped  = "skipped"  // a peer is missing; Reason says which
	statusFailed   = "failed"   // the comparison ran and broke; Reason says how
)

// Entry is one anchor's latest pass.
type Entry struct {
	Name   string `json:"name"`
	Title  string `json:"title"`
	Method string `json:"method"` // the section of docs/benchmarks.md that says how
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Date   string `json:"date,omitempty"`
	// Commit is the code measured: HEAD, with "+dirty" when files outside
	// docs/ and README.md differed from it.
	Commit    string     `json:"commit,omitempty"`
	Host      *Host      `json:"host,omitempty"`
	Load      *Load      `json:"load,omitempty"`
	Commands  []string   `json:"commands,omitempty"`
	Rounds    []Round    `json:"rounds,omitempty"`
	Ratios    []Ratio    `json:"ratios,omitempty"`
	Agreement *Agreement `json:"agreement,omitempty"`
}

// Round is one alternation: each tool's figures and the ratios ours/theirs.
type Round struct {
	Figures map[string]float64 `json:"figures"`
	Ratios  map[string]float64 `json:"ratios"`
}

// Ratio is the median over the rounds of one per-round ratio, with the
// rounds' range.
type Ratio struct {
	Metric string  `json:"metric"`
	Label  string  `json:"label"`
	Better string  `json:"better"` // "higher" or "lower"
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// Agreement is the outcome of an anchor that checks sameness, not speed.
type Agreement struct {
	What     string   `json:"what"`
	Compared int      `json:"compared"`
	Agree    int      `json:"agree"`
	Detail   []string `json:"detail,omitempty"`
}

// OK reports whether every compared item agreed.
func (a *Agreement) OK() bool { return a != nil && a.Compared > 0 && a.Agree == a.Compared }

// summarize fills e.Ratios from e.Rounds, one per metric of a, in a's
// order; a metric no round has is left out.
func summarize(e *Entry, a *anchor) {
	e.Ratios = nil
	for _, m := range a.metrics {
		var v []float64
		for _, r := range e.Rounds {
			if x, ok := r.Ratios[m.key]; ok && x > 0 {
				v = append(v, x)
			}
		}
		if len(v) == 0 {
			continue
		}
		e.Ratios = append(e.Ratios, Ratio{
			Metric: m.key, Label: m.label, Better: m.better,
			Median: median(v), Min: slices.Min(v), Max: slices.Max(v), N: len(v),
		})
	}
}

// median returns the median of v (the mean of the middle two when even), 0
// for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// readFile reads path; a missing file is an empty File.
func readFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &File{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("anchors: %w", err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("anchors: %s: %w", path, err)
	}
	return &f, nil
}

// merge puts the new entries in place of the old ones of the same name
// and orders the entries as the anchor table does.
func merge(f *File, fresh []*Entry) {
	byName := map[string]*Entry{}
	for _, e := range f.Anchors {
		byName[e.Name] = e
	}
	for _, e := range fresh {
		byName[e.Name] = e
	}
	f.Anchors = f.Anchors[:0]
	for _, a := range anchors {
		if e, ok := byName[a.name]; ok {
			f.Anchors = append(f.Anchors, e)
		}
	}
	f.Note = "written by `go run ./scripts/anchors`; README.md's and docs/benchmarks.md's tables are its rendering (`go run ./scripts/anchors -render`)"
}

// writeFile writes f as indented JSON.
func writeFile(path string, f *File) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("anchors: %w", err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("anchors: %w", err)
	}
	return nil
}
