package shard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxShards bounds Spec.Count: far more generators than any test needs, and
// few enough that a merge's per-shard rows stay small.
const MaxShards = 10000

// Errors that Merge, Decode and the functions of this package wrap.
var (
	// ErrInvalid is wrapped by errors about an argument or a result that
	// cannot be right: a shard number outside its count, a malformed
	// result file.
	ErrInvalid = errors.New("shard: invalid")
	// ErrPastStart is wrapped by WaitUntil's error for a start time that
	// has already passed.
	ErrPastStart = errors.New("shard: start time already past")
	// ErrMismatch is wrapped by Merge's error when results cannot be merged:
	// different shard counts, histogram settings or intervals, or one shard
	// number twice.
	ErrMismatch = errors.New("shard: results do not match")
	// ErrIncomplete is wrapped by Merge's error when a shard is missing or
	// failed; the Merged result then names them and holds the others.
	ErrIncomplete = errors.New("shard: incomplete")
	// ErrNoWindow is wrapped by Merge's error when no interval was measured
	// by every shard.
	ErrNoWindow = errors.New("shard: no common window")
)

// Spec is one shard's place among Count: Index runs from 0 to Count-1. The
// zero Spec is invalid; Single is a run that is not sharded.
type Spec struct {
	Index int
	Count int
}

// Single is the Spec of an unsharded run: shard 0 of 1.
var Single = Spec{Index: 0, Count: 1}

// ParseSpec parses "I/N" (0 <= I < N <= MaxShards), the form of the tools'
// -shard flag and of an Indexed Job's JOB_COMPLETION_INDEX beside its
// completion count. Its error wraps ErrInvalid.
func ParseSpec(s string) (Spec, error) {
	i, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Spec{}, fmt.Errorf("%w shard %q: want I/N, e.g. 0/4", ErrInvalid, s)
	}
	idx, err1 := strconv.Atoi(i)
	cnt, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil {
		return Spec{}, fmt.Errorf("%w shard %q: I and N must be integers", ErrInvalid, s)
	}
	sp := Spec{Index: idx, Count: cnt}
	return sp, sp.Validate()
}

// Validate reports whether s is a shard of a valid count; its error wraps
// ErrInvalid.
func (s Spec) Validate() error {
	switch {
	case s.Count < 1 || s.Count > MaxShards:
		return fmt.Errorf("%w shard count %d: must be 1..%d", ErrInvalid, s.Count, MaxShards)
	case s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("%w shard index %d: must be 0..%d for %d shards", ErrInvalid, s.Index, s.Count-1, s.Count)
	}
	return nil
}

// String returns "I/N".
func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Part returns this shard's part [lo, hi) of n items (keys, connections,
// workers), the parts of all shards tiling [0, n) in order and differing in
// size by one at most. A shard may get an empty part when n < Count. An
// invalid Spec or a negative n gives 0, 0.
func (s Spec) Part(n int) (lo, hi int) {
	if s.Validate() != nil || n <= 0 {
		return 0, 0
	}
	q, r := n/s.Count, n%s.Count
	lo = s.Index*q + min(s.Index, r)
	hi = lo + q
	if s.Index < r {
		hi++
	}
	return lo, hi
}
