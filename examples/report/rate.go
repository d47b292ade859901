package main

import (
	"fmt"
	"strconv"
	"strings"
)

// parseRate reads a bit rate with an optional K, M, G or T suffix (decimal, as
// iperf3's -b does): "5G" is 5e9 bits/s.
func parseRate(s string) (float64, error) {
	s = strings.TrimSpace(s)
	orig := s
	if s == "" {
		return 0, fmt.Errorf("empty rate")
	}
	mult := 1.0
	switch s[len(s)-1] {
	case 'k', 'K':
		mult = 1e3
	case 'm', 'M':
		mult = 1e6
	case 'g', 'G':
		mult = 1e9
	case 't', 'T':
		mult = 1e12
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad rate %q: want a number with an optional K, M, G or T suffix", orig)
	}
	return v * mult, nil
}

// formatRate prints a bit rate the way it was most likely written.
func formatRate(v float64) string {
	switch {
	case v >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', -1, 64) + "G"
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "K"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
