package shard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxShards bounds Spec.Count: far more generators than any test needs, and
// few enough that a merge's per-shard rows stay small.
const maxShards = 10000

// Errors that the functions of this package wrap.
var (
	// ErrInvalid is wrapped by errors about an argument or a result that
	// cannot be right: a shard number outside its count, a setting out of
	// range, a malformed result file, counts that their histograms do not
	// hold.
	ErrInvalid = errors.New("shard: invalid")
	// ErrPastStart is wrapped by Run's error for a start time that has
	// already passed.
	ErrPastStart = errors.New("shard: start time already past")
	// ErrMismatch is wrapped by Merge's error when results cannot be merged:
	// different shard counts, tools, histogram settings or intervals, or
	// one shard number twice.
	ErrMismatch = errors.New("shard: results do not match")
	// ErrIncomplete is wrapped by Merge's error when a shard is missing,
	// failed or unreadable; the Merged result then names them and holds the
	// others.
	ErrIncomplete = errors.New("shard: incomplete")
	// ErrNoWindow is wrapped by Merge's error when no interval was measured
	// by every shard.
	ErrNoWindow = errors.New("shard: no common window")
)

// Spec is one shard's place among Count: Index runs from 0 to Count-1
// (Count at most 10,000). The zero Spec stands for an unsharded run (shard
// 0 of 1) in Config; a Result's must be valid.
type Spec struct {
	Index int
	Count int
}

// ParseSpec parses "I/N" (0 <= I < N <= 10000), the form of the tools'
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
	if err := sp.validate("Spec"); err != nil {
		return Spec{}, err
	}
	return sp, nil
}

// validate reports whether s is a shard of a valid count; its error wraps
// ErrInvalid and names the field (field.Count or field.Index).
func (s Spec) validate(field string) error {
	switch {
	case s.Count < 1 || s.Count > maxShards:
		return fmt.Errorf("%w %s.Count %d: must be 1..%d", ErrInvalid, field, s.Count, maxShards)
	case s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("%w %s.Index %d: must be 0..%d for %d shards", ErrInvalid, field, s.Index, s.Count-1, s.Count)
	}
	return nil
}

// String returns "I/N".
func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Part returns this shard's part [lo, hi) of n items (keys, connections,
// workers), the parts of all shards tiling [0, n) in order and differing in
// size by one at most. A shard may get an empty part when n < Count. An
// invalid Spec or a negative n gives 0, 0; the zero Spec gets all of n.
func (s Spec) Part(n int) (lo, hi int) {
	if s == (Spec{}) {
		s.Count = 1
	}
	if s.validate("Spec") != nil || n <= 0 {
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
