package shard

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// format names the result encoding; Decode refuses another.
const format = "netperfkit-shard/1"

// maxResultBytes bounds what Decode reads: a day of 1 s intervals with
// compressed histograms fits well within it.
const maxResultBytes = 256 << 20

// Result is everything one shard measured: its place, its start, its
// per-interval histograms on the wall-clock grid, its CPU use, and the
// tool's own result beside them. Run returns one; WriteFile writes it as JSON
// (histograms in hdrhistogram-go's compressed V2 encoding, base64, as
// HdrHistogram's tools read them); Decode reads it back.
type Result struct {
	// Tool names the generator ("cachebench", "pingpong"); Run leaves it
	// to the caller. Merge refuses shards of different tools.
	Tool string
	// Shard is the shard's place among its siblings.
	Shard Spec
	// Host is the generator's host name, for the reader.
	Host string
	// StartAt is the requested common start; zero when none was set.
	StartAt time.Time
	// Start and End bound the measurement (wall clock).
	Start, End time.Time
	// Interval is the grid's interval.
	Interval time.Duration
	// Intervals holds the measurement, in order.
	Intervals []Interval
	// CPU is the generator's CPU use over the measurement; nil when the
	// platform cannot say.
	CPU *CPU
	// SendLatenessP99 and ResponseP99 are an open-loop generator's own
	// send lateness (how late it started operations against its schedule)
	// and the response time it measured, both p99; nil for a closed-loop
	// run, which has no schedule. Run leaves them to the caller.
	SendLatenessP99, ResponseP99 *time.Duration
	// Error, when not empty, says why the shard failed or was cut short;
	// Merge then leaves it out of the window and names it.
	Error string
	// Detail is the tool's own full result (JSON), carried as it is; Run
	// leaves it to the caller.
	Detail json.RawMessage
}

// CPU is a generator's CPU use over its measurement and the limit it ran
// under.
type CPU struct {
	// Process is the CPU time (user and system) the process used.
	Process time.Duration
	// Cgroup is the CPU time the process's cgroup used (its other
	// processes included); nil when it could not be read.
	Cgroup *time.Duration
	// Wall is the wall time the two were measured over.
	Wall time.Duration
	// LimitCores is the CPU the process could use, in cores: the cgroup's
	// quota over its period where one is set, else the CPUs it may run on.
	LimitCores float64
	// LimitSource says where LimitCores comes from: "cgroup v1
	// cpu.cfs_quota_us", "cgroup v2 cpu.max" or "cpus".
	LimitSource string
	// Periods and Throttled are the cgroup's enforcement periods over the
	// measurement and those in which its quota throttled it (cpu.stat's
	// nr_periods and nr_throttled); nil without a quota.
	Periods, Throttled *int64
	// HostBusy is the share (0..1) of the host's CPUs that were busy over
	// the measurement, whoever used them (other shards, the server under
	// test, other tenants); nil when it could not be read (not Linux).
	HostBusy *float64
}

// UsedCores is the CPU used over the wall time, in cores, the use that
// LimitCores bounds: the cgroup's when its quota is the limit (and its use
// is known), else the process's. Zero for a nil CPU or no wall time.
func (c *CPU) UsedCores() float64 {
	if c == nil || c.Wall <= 0 {
		return 0
	}
	used := c.Process
	if c.Cgroup != nil && c.Periods != nil {
		used = max(used, *c.Cgroup)
	}
	return used.Seconds() / c.Wall.Seconds()
}

type intervalJSON struct {
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Count      int64     `json:"count"`
	Errors     int64     `json:"errors"`
	OutOfRange int64     `json:"out_of_range,omitempty"`
	Histogram  string    `json:"histogram,omitempty"`
}

type cpuJSON struct {
	ProcessSeconds float64  `json:"process_seconds"`
	CgroupSeconds  *float64 `json:"cgroup_seconds,omitempty"`
	WallSeconds    float64  `json:"wall_seconds"`
	LimitCores     float64  `json:"limit_cores"`
	LimitSource    string   `json:"limit_source"`
	Periods        *int64   `json:"periods,omitempty"`
	Throttled      *int64   `json:"throttled_periods,omitempty"`
	HostBusy       *float64 `json:"host_busy,omitempty"`
}

type histJSON struct {
	LowestUs           float64 `json:"lowest_us"`
	HighestUs          float64 `json:"highest_us"`
	SignificantFigures int     `json:"significant_figures"`
	Unit               string  `json:"unit"`
}

type resultJSON struct {
	Format          string          `json:"format"`
	Tool            string          `json:"tool"`
	Shard           int             `json:"shard"`
	Shards          int             `json:"shards"`
	Host            string          `json:"host,omitempty"`
	StartAt         *time.Time      `json:"start_at,omitempty"`
	Start           time.Time       `json:"start"`
	End             time.Time       `json:"end"`
	IntervalSeconds float64         `json:"interval_seconds"`
	Histogram       histJSON        `json:"histogram"`
	Intervals       []intervalJSON  `json:"intervals"`
	CPU             *cpuJSON        `json:"cpu,omitempty"`
	SendLatenessP99 *float64        `json:"send_lateness_p99_us,omitempty"`
	ResponseP99     *float64        `json:"response_p99_us,omitempty"`
	Error           string          `json:"error,omitempty"`
	Detail          json.RawMessage `json:"detail,omitempty"`
}

func usPtr(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	v := float64(*d) / 1e3
	return &v
}

func durPtr(us *float64, scale float64) *time.Duration {
	if us == nil {
		return nil
	}
	d := time.Duration(*us*scale + 0.5)
	return &d
}

func secs(d time.Duration) float64 { return d.Seconds() }

// WriteFile writes r to path as one JSON object (histograms in
// hdrhistogram-go's compressed V2 encoding, base64, as HdrHistogram's tools
// read them), replacing the file; a path of "-" writes to stdout instead,
// which may be any io.Writer. It refuses (ErrInvalid, naming the field;
// ErrMismatch for other histogram settings) a nil r and what Decode and
// Merge would refuse, so that every file it writes can be merged; a refused
// r leaves the file as it was. The error also wraps ErrInvalid for an
// empty path or a nil stdout with "-".
func WriteFile(path string, stdout io.Writer, r *Result) error {
	switch {
	case path == "":
		return fmt.Errorf("%w WriteFile: empty path (\"-\" for stdout)", ErrInvalid)
	case path == "-" && stdout == nil:
		return fmt.Errorf("%w WriteFile: nil stdout for path \"-\"", ErrInvalid)
	case path == "-":
		return encode(stdout, r)
	}
	var buf bytes.Buffer
	if err := encode(&buf, r); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	return nil
}

// encode writes r as one JSON object, as WriteFile describes; it refuses a
// nil w too.
func encode(w io.Writer, r *Result) error {
	switch {
	case w == nil:
		return fmt.Errorf("%w WriteFile: nil writer", ErrInvalid)
	case r == nil:
		return fmt.Errorf("%w WriteFile: nil result", ErrInvalid)
	}
	if err := r.check(); err != nil {
		return err
	}
	j := resultJSON{
		Format: format, Tool: r.Tool, Shard: r.Shard.Index, Shards: r.Shard.Count, Host: r.Host,
		Start: r.Start.UTC(), End: r.End.UTC(), IntervalSeconds: secs(r.Interval), Histogram: settingsJSON(),
		Intervals:       make([]intervalJSON, 0, len(r.Intervals)),
		SendLatenessP99: usPtr(r.SendLatenessP99), ResponseP99: usPtr(r.ResponseP99),
		Error: r.Error, Detail: r.Detail,
	}
	if !r.StartAt.IsZero() {
		t := r.StartAt.UTC()
		j.StartAt = &t
	}
	for _, iv := range r.Intervals {
		ij := intervalJSON{Start: iv.Start.UTC(), End: iv.End.UTC(), Count: iv.Count, Errors: iv.Errors, OutOfRange: iv.OutOfRange}
		if iv.Histogram != nil && iv.Histogram.TotalCount() > 0 {
			b, err := iv.Histogram.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
			if err != nil {
				return fmt.Errorf("shard: encoding a histogram: %w", err)
			}
			ij.Histogram = string(b)
		}
		j.Intervals = append(j.Intervals, ij)
	}
	if c := r.CPU; c != nil {
		j.CPU = &cpuJSON{ProcessSeconds: secs(c.Process), WallSeconds: secs(c.Wall), LimitCores: c.LimitCores,
			LimitSource: c.LimitSource, Periods: c.Periods, Throttled: c.Throttled, HostBusy: c.HostBusy}
		if c.Cgroup != nil {
			v := secs(*c.Cgroup)
			j.CPU.CgroupSeconds = &v
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(j); err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	return nil
}

func settingsJSON() histJSON {
	return histJSON{LowestUs: float64(histogramLowest) / 1e3, HighestUs: float64(histogramHighest) / 1e3,
		SignificantFigures: histogramSigFigs, Unit: "ns"}
}

// Decode reads one Result written by WriteFile, and refuses trailing data
// after it: a file holds one shard's result (tool -out - >> all.json twice
// is an error, not the first shard alone). It checks what Merge relies on,
// as Merge checks results in memory: the format, the shard's place, the
// histogram settings (this package's, in the header and in every
// histogram), intervals in order, on the grid and within the measurement,
// and counts that match their histograms. Its error wraps ErrInvalid
// (ErrMismatch for other histogram settings); the Result is never nil.
func Decode(rd io.Reader) (*Result, error) {
	r := &Result{}
	if rd == nil {
		return r, fmt.Errorf("%w Decode: nil reader", ErrInvalid)
	}
	var j resultJSON
	lr := &io.LimitedReader{R: rd, N: maxResultBytes + 1}
	dec := json.NewDecoder(lr)
	if err := dec.Decode(&j); err != nil {
		return r, fmt.Errorf("%w result: %w", ErrInvalid, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return r, fmt.Errorf("%w result: trailing data after the result (one result per file: write each shard to its own file)", ErrInvalid)
	}
	if lr.N <= 0 {
		return r, fmt.Errorf("%w result: larger than %d bytes", ErrInvalid, maxResultBytes)
	}
	if err := j.check(); err != nil {
		return r, err
	}
	d := &Result{Tool: j.Tool, Shard: Spec{Index: j.Shard, Count: j.Shards}, Host: j.Host,
		Start: j.Start, End: j.End, Interval: time.Duration(j.IntervalSeconds*1e9 + 0.5),
		SendLatenessP99: durPtr(j.SendLatenessP99, 1e3), ResponseP99: durPtr(j.ResponseP99, 1e3),
		Error: j.Error, Detail: j.Detail}
	if j.StartAt != nil {
		d.StartAt = *j.StartAt
	}
	if c := j.CPU; c != nil {
		if err := c.check(); err != nil {
			return r, err
		}
		d.CPU = &CPU{Process: time.Duration(c.ProcessSeconds * 1e9), Cgroup: durPtr(c.CgroupSeconds, 1e9),
			Wall: time.Duration(c.WallSeconds * 1e9), LimitCores: c.LimitCores, LimitSource: c.LimitSource,
			Periods: c.Periods, Throttled: c.Throttled, HostBusy: c.HostBusy}
	}
	for i, ij := range j.Intervals {
		iv, err := ij.decode(i)
		if err != nil {
			return r, err
		}
		d.Intervals = append(d.Intervals, iv)
	}
	if err := d.check(); err != nil {
		return r, err
	}
	return d, nil
}

// check refuses what cannot be converted safely: another format or
// histogram settings, an interval out of range (before it is converted to
// a Duration), too many intervals (before they are decoded).
func (j *resultJSON) check() error {
	switch {
	case j.Format != format:
		return fmt.Errorf("%w result: format %q, want %q", ErrInvalid, j.Format, format)
	case j.Histogram != settingsJSON():
		return fmt.Errorf("%w result: histogram settings %+v, want %+v", ErrMismatch, j.Histogram, settingsJSON())
	case !(j.IntervalSeconds >= minInterval.Seconds() && j.IntervalSeconds <= maxInterval.Seconds()):
		return fmt.Errorf("%w result: interval_seconds %v outside %v..%v", ErrInvalid, j.IntervalSeconds, minInterval, maxInterval)
	case len(j.Intervals) > maxIntervals+1:
		return fmt.Errorf("%w result: %d intervals, above %d", ErrInvalid, len(j.Intervals), maxIntervals+1)
	}
	return nil
}

func (c *cpuJSON) check() error {
	bad := func(v float64) bool { return !(v >= 0 && v < 1e12) }
	if bad(c.ProcessSeconds) || bad(c.WallSeconds) || bad(c.LimitCores) || c.CgroupSeconds != nil && bad(*c.CgroupSeconds) ||
		c.Periods != nil && *c.Periods < 0 || c.Throttled != nil && *c.Throttled < 0 ||
		c.HostBusy != nil && !(*c.HostBusy >= 0 && *c.HostBusy <= 1) {
		return fmt.Errorf("%w result: cpu figures out of range", ErrInvalid)
	}
	return nil
}

// decode converts interval i; Result.check checks it against the others.
func (ij *intervalJSON) decode(i int) (Interval, error) {
	iv := Interval{Start: ij.Start, End: ij.End, Count: ij.Count, Errors: ij.Errors, OutOfRange: ij.OutOfRange}
	if ij.Histogram == "" {
		return iv, nil
	}
	bad := func(why string) (Interval, error) {
		return Interval{}, fmt.Errorf("%w result: interval %d: %s", ErrInvalid, i, why)
	}
	if err := checkHistogramHeader(ij.Histogram); err != nil {
		return bad(err.Error())
	}
	h, err := hdrhistogram.Decode([]byte(ij.Histogram))
	if err != nil {
		return bad("histogram: " + err.Error())
	}
	iv.Histogram = h
	return iv, nil
}

// checkHistogramHeader reads the settings in an encoded histogram's header
// before hdrhistogram-go sizes a histogram from them: a result file is
// input, and a forged header could ask for gigabytes.
func checkHistogramHeader(enc string) error {
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(raw) < 8 {
		return fmt.Errorf("histogram is not base64 of an encoded histogram")
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	defer z.Close()
	var hdr struct {
		Cookie, Len, Offset, SigFigs int32
		Lowest, Highest              int64
	}
	if err := binary.Read(z, binary.BigEndian, &hdr); err != nil {
		return fmt.Errorf("histogram header: %w", err)
	}
	if hdr.SigFigs != histogramSigFigs || hdr.Lowest != int64(histogramLowest) || hdr.Highest != int64(histogramHighest) {
		return fmt.Errorf("histogram settings (%d figures, %d..%d ns) are not this package's", hdr.SigFigs, hdr.Lowest, hdr.Highest)
	}
	return nil
}
