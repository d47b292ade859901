package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// prefixWriter puts 3.21's --timestamps and -T/--title prefixes in front of
// every write, as iperf_printf puts them in front of every call (each
// Fprintf here is one call; a call that spans lines is prefixed once, as in
// 3.21). It is safe for concurrent use: the server reports tests from
// several goroutines.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	stamp  string // strftime format, "" for none
	title  string
	now    func() time.Time
	flush  bool // --forceflush / --logfile: sync after each write
	syncer interface{ Sync() error }
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var pre string
	if p.stamp != "" {
		pre = strftime(p.stamp, p.now())
	}
	if p.title != "" {
		pre += p.title + ":  "
	}
	if pre != "" {
		if _, err := io.WriteString(p.w, pre); err != nil {
			return 0, err
		}
	}
	n, err := p.w.Write(b)
	if err == nil && p.flush && p.syncer != nil {
		_ = p.syncer.Sync()
	}
	return n, err
}

// strftime formats t with the C strftime conversions iperf3 users pass to
// --timestamps (the POSIX set in the C locale). Unknown conversions are
// copied as written.
func strftime(format string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		// Skip the E and O modifiers (alternative locale forms).
		if (format[i] == 'E' || format[i] == 'O') && i+1 < len(format) {
			i++
		}
		b.WriteString(conversion(format[i], t))
	}
	return b.String()
}

func conversion(c byte, t time.Time) string {
	switch c {
	case 'a':
		return t.Format("Mon")
	case 'A':
		return t.Format("Monday")
	case 'b', 'h':
		return t.Format("Jan")
	case 'B':
		return t.Format("January")
	case 'c':
		return t.Format("Mon Jan _2 15:04:05 2006")
	case 'C':
		return fmt.Sprintf("%02d", t.Year()/100)
	case 'd':
		return t.Format("02")
	case 'D':
		return t.Format("01/02/06")
	case 'e':
		return t.Format("_2")
	case 'F':
		return t.Format("2006-01-02")
	case 'H':
		return t.Format("15")
	case 'I':
		return t.Format("03")
	case 'j':
		return fmt.Sprintf("%03d", t.YearDay())
	case 'm':
		return t.Format("01")
	case 'M':
		return t.Format("04")
	case 'n':
		return "\n"
	case 'p':
		return t.Format("PM")
	case 'r':
		return t.Format("03:04:05 PM")
	case 'R':
		return t.Format("15:04")
	case 's':
		return fmt.Sprint(t.Unix())
	case 'S':
		return t.Format("05")
	case 't':
		return "\t"
	case 'T', 'X':
		return t.Format("15:04:05")
	case 'u':
		return fmt.Sprint((int(t.Weekday())+6)%7 + 1)
	case 'w':
		return fmt.Sprint(int(t.Weekday()))
	case 'x':
		return t.Format("01/02/06")
	case 'y':
		return t.Format("06")
	case 'Y':
		return fmt.Sprint(t.Year())
	case 'z':
		return t.Format("-0700")
	case 'Z':
		return t.Format("MST")
	case '%':
		return "%"
	}
	return "%" + string(c)
}
