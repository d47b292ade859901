package cachecli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// GlideLogStderr is the -glide-log value that sends glide's log to standard
// error.
const GlideLogStderr = "stderr"

// GlideLogUsage is the help text of a -glide-log flag.
const GlideLogUsage = "valkey-glide's core log (its warnings and errors: failed connections, reconnects, timeouts): empty for none (quiet), " +
	"stderr, or a FILE to which glide appends .YYYY-MM-DD-HH, starting a new one every hour (UTC); never the standard output the tables go to"

// glideLogPoll is how often GlideLog copies new lines to standard error.
const glideLogPoll = 200 * time.Millisecond

// GlideLog routes valkey-glide's core logger, which is global to the
// process, as a -glide-log value asks: "" or "off" turns it off; "stderr"
// copies its lines to stderr as they come (glide's own console logger
// writes only to standard output, where they would interleave with the
// tables, so it writes to a file in a temporary directory that GlideLog
// copies from); anything else is a file of glide's (see GlideLogUsage).
// Call the returned stop once glide is done: it turns the logger off when
// it copied to stderr, copies the last lines and removes the directory.
// In a binary built without cgo there is no glide, and GlideLog does
// nothing.
func GlideLog(dest string, stderr io.Writer) (stop func(), err error) {
	nop := func() {}
	switch dest {
	case "", "off":
		return nop, setGlideLog("")
	case GlideLogStderr:
	default:
		return nop, setGlideLog(dest)
	}
	dir, err := os.MkdirTemp("", "netperfkit-glide-log-")
	if err != nil {
		return nop, fmt.Errorf("glide log: %w", err)
	}
	if err := setGlideLog(filepath.Join(dir, "glide.log")); err != nil {
		_ = os.RemoveAll(dir)
		return nop, err
	}
	t := &logTail{dir: dir, w: stderr, offsets: map[string]int64{}}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(glideLogPoll)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				t.copyNew()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-finished
			_ = setGlideLog("")
			t.copyNew()
			_ = os.RemoveAll(dir)
		})
	}, nil
}

// logTail copies what the files of dir gained since the last copy to w,
// file by file in name order (glide's hourly files sort by time).
type logTail struct {
	dir     string
	w       io.Writer
	offsets map[string]int64
}

func (t *logTail) copyNew() {
	entries, err := os.ReadDir(t.dir)
	if err != nil {
		return
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	for _, n := range names {
		n, err := t.copyFile(n)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(t.w, "glide log: %v (%d bytes copied)\n", err, n)
		}
	}
}

// copyFile copies name's bytes past its offset.
func (t *logTail) copyFile(name string) (int64, error) {
	f, err := os.Open(filepath.Join(t.dir, name))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := f.Seek(t.offsets[name], io.SeekStart); err != nil {
		return 0, err
	}
	n, err := io.Copy(t.w, f)
	t.offsets[name] += n
	return n, err
}
