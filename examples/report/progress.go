package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress shows what runs now and an estimate of the time left on one
// self-rewriting terminal line. It is silent when its writer is not a
// terminal, so piped output and CI logs carry only the results.
type progress struct {
	w       io.Writer // nil when quiet
	mu      sync.Mutex
	planned time.Duration // sum of every step's planned duration
	done    time.Duration // planned duration of finished steps
	step    string
	stepDur time.Duration
	stepAt  time.Time
	stop    chan struct{}
	wg      sync.WaitGroup
}

// isTerminal reports whether f is a character device (a terminal), which is
// all a progress line needs to know and works on every platform.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newProgress(w io.Writer, planned time.Duration) *progress {
	p := &progress{w: w, planned: planned, stop: make(chan struct{})}
	if w != nil {
		p.wg.Add(1)
		go p.loop()
	}
	return p
}

// Start begins a step that is expected to take about d.
func (p *progress) Start(step string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.step != "" {
		p.done += p.stepDur
	}
	p.step, p.stepDur, p.stepAt = step, d, time.Now()
	p.drawLocked()
}

func (p *progress) loop() {
	defer p.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.drawLocked()
			p.mu.Unlock()
		}
	}
}

func (p *progress) drawLocked() {
	if p.w == nil || p.step == "" {
		return
	}
	in := time.Since(p.stepAt)
	if in > p.stepDur {
		in = p.stepDur
	}
	left := p.planned - p.done - in
	if left < 0 {
		left = 0
	}
	line := fmt.Sprintf("report: %s (about %s left)", p.step, left.Round(time.Second))
	fmt.Fprintf(p.w, "\r%-78.78s", line)
}

// Close stops the display and clears its line.
func (p *progress) Close() {
	if p.w == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 78))
}
