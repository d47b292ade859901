package throughput

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// streamData is one stream's data source (Config.SendFrom) or sink
// (Config.ReceiveTo). The stream's goroutine alone uses it while the test
// runs; the engine closes it once every goroutine has returned.
type streamData struct {
	r io.Reader
	w io.Writer
	// file is r when sendfile can send it (ZeroCopy, an *os.File holding a
	// regular file), with the next offset to send and the file's size.
	file      *os.File
	off, size int64
}

// dataError is a source's or sink's failure: it ends the test, and a sink's
// is returned by Run even when it happens once the test's time is over.
type dataError struct {
	op  string // "send from", "receive to"
	err error
}

func (e *dataError) Error() string { return e.op + ": " + e.err.Error() }
func (e *dataError) Unwrap() error { return e.err }

// errSourceEnd is a sending stream's write once its source has ended.
var errSourceEnd = errors.New("throughput: source ended")

// openData opens stream id's source, when it sends and SendFrom is set, or
// its sink, when it receives and ReceiveTo is set; nil when there is none.
func openData(c *Config, id int, send bool) (*streamData, error) {
	switch {
	case send && c.SendFrom != nil:
		r, err := c.SendFrom(id)
		if err == nil && r == nil {
			err = errors.New("no reader")
		}
		if err != nil {
			return nil, fmt.Errorf("throughput: stream %d: send from: %w", id, err)
		}
		d := &streamData{r: r}
		if c.ZeroCopy {
			d.sendfileFrom()
		}
		return d, nil
	case !send && c.ReceiveTo != nil:
		w, err := c.ReceiveTo(id)
		if err == nil && w == nil {
			err = errors.New("no writer")
		}
		if err != nil {
			return nil, fmt.Errorf("throughput: stream %d: receive to: %w", id, err)
		}
		return &streamData{w: w}, nil
	}
	return nil, nil
}

// sendfileFrom sets d.file when sendfile can send d's reader: an *os.File
// holding a regular file, from its current offset to its size.
func (d *streamData) sendfileFrom() {
	f, ok := d.r.(*os.File)
	if !ok || !sendfileAvailable {
		return
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return
	}
	d.file, d.off, d.size = f, off, st.Size()
}

// openData opens the streams' sources and sinks.
func (e *engine) openData() error {
	for _, s := range e.streams {
		d, err := openData(e.cfg, s.id, s.send)
		if err != nil {
			return err
		}
		s.data = d
	}
	return nil
}

// dataNotes are the notes a test's sources call for: with ZeroCopy, that
// a source sendfile cannot send is copied.
func (e *engine) dataNotes() []string {
	if !e.cfg.ZeroCopy || !sendfileAvailable {
		return nil
	}
	for _, s := range e.streams {
		if s.data != nil && s.data.r != nil && s.data.file == nil {
			return []string{"zerocopy: SendFrom's reader is not a regular file (*os.File), so its data is copied into each write"}
		}
	}
	return nil
}

// countSources counts the streams with a source, which end the client's
// test once they all have ended (sourceEnded). A server's sources end no
// test: the client ends it, and until then the server's limits and
// failures still act (they act through the engine's end).
func (e *engine) countSources() {
	if !e.client {
		return
	}
	for _, s := range e.streams {
		if s.send && s.data != nil {
			e.sources.Add(1)
		}
	}
}

// sourceEnded ends the client's test once the last source has ended.
func (e *engine) sourceEnded() {
	if e.client && e.sources.Add(-1) == 0 {
		e.finish(nil)
	}
}

// dataFailed records a source's or sink's error, which the run returns
// even after the test's end, and ends the test.
func (e *engine) dataFailed(err error) {
	e.errMu.Lock()
	if e.dataErr == nil {
		e.dataErr = err
	}
	e.errMu.Unlock()
	e.finish(err)
}

// dataFailure is the first source or sink error, closing a sink included.
func (e *engine) dataFailure() error {
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.dataErr
}

// unblockData ends a source's read in progress, and with sinks a sink's
// write, where the reader or writer takes a deadline, as stopSenders and
// stop do the connections'.
func (e *engine) unblockData(past time.Time, sinks bool) {
	for _, s := range e.streams {
		if s.data == nil {
			continue
		}
		if r, ok := s.data.r.(interface{ SetReadDeadline(time.Time) error }); ok {
			_ = r.SetReadDeadline(past)
		}
		if w, ok := s.data.w.(interface{ SetWriteDeadline(time.Time) error }); sinks && ok {
			_ = w.SetWriteDeadline(past)
		}
	}
}

// closeData closes the sources and sinks that are io.Closers, once the
// streams' goroutines have returned; a sink's error is the run's.
func (e *engine) closeData() {
	for _, s := range e.streams {
		d := s.data
		if d == nil {
			continue
		}
		s.data = nil
		if c, ok := d.r.(io.Closer); ok {
			_ = c.Close()
		}
		if c, ok := d.w.(io.Closer); ok {
			if err := c.Close(); err != nil {
				e.dataFailed(fmt.Errorf("throughput: stream %d: %w", s.id, &dataError{op: "receive to", err: err}))
			}
		}
	}
}

// sinkReader wraps a receiving stream's read so that what it reads is
// written to the stream's sink; a write error is the read's (a
// *dataError). Without a sink it returns read as it is.
func sinkReader(s *flowStream, buf []byte, read func() (int, error)) func() (int, error) {
	if s.data == nil || s.data.w == nil {
		return read
	}
	w := s.data.w
	return func() (int, error) {
		n, err := read()
		if n > 0 {
			if werr := writeSink(s, w, buf[:n]); werr != nil {
				return n, werr
			}
		}
		return n, err
	}
}

// writeSink writes b, which stream s received, to its sink w; while it
// writes, the stream counts as busy for the end's drain. A write error is a
// *dataError.
func writeSink(s *flowStream, w io.Writer, b []byte) error {
	s.sinking.Store(true)
	_, err := w.Write(b)
	s.sinking.Store(false)
	if err != nil {
		return &dataError{op: "receive to", err: err}
	}
	return nil
}

// dataSender sends a source's blocks on one stream the way the stream
// sends: through the Go poller, or on the stream's thread
// (Config.StreamThreads).
type dataSender struct {
	// send sends all of b, unless an error stops it, and says how much went.
	send func(b []byte) (int, error)
	// sendFile sends n bytes of f from off with sendfile, as send does b;
	// nil where the stream cannot.
	sendFile func(f *os.File, off int64, n int) (int, error)
	// done ends the sending (a thread's: see threadWriter).
	done func()
}

// pollerSender is a stream's dataSender through the poller.
func pollerSender(s *flowStream) dataSender {
	ds := dataSender{send: s.conn.Write, done: func() {}}
	sc, ok := s.conn.(syscall.Conn)
	if !ok || !sendfileAvailable {
		return ds
	}
	if rc, err := sc.SyscallConn(); err == nil {
		ds.sendFile = func(f *os.File, off int64, n int) (int, error) { return sendFileAt(rc, f, off, n) }
	}
	return ds
}

// sourceWriter is sendTCP's write for a stream with a source: each call
// sends the source's next block, of at most len(buf) bytes, and returns
// errSourceEnd once the source has ended. A source sendfile can send
// (streamData.file) is sent with it; any other is read into buf.
func (e *engine) sourceWriter(s *flowStream, buf []byte) (write func() (int, error), done func()) {
	d := s.data
	ds := pollerSender(s)
	if threadOf(s.conn) != nil {
		ds = e.threadSender(s)
	}
	if d.file != nil && ds.sendFile != nil {
		return func() (int, error) {
			n := min(int64(len(buf)), d.size-d.off)
			if n <= 0 {
				return 0, errSourceEnd
			}
			sent, err := ds.sendFile(d.file, d.off, int(n))
			d.off += int64(sent)
			return sent, err
		}, ds.done
	}
	return func() (int, error) {
		n, err := io.ReadFull(d.r, buf)
		switch {
		case n == 0 && err == io.EOF:
			return 0, errSourceEnd
		case err != nil && err != io.ErrUnexpectedEOF:
			return 0, &dataError{op: "send from", err: err}
		}
		return ds.send(buf[:n])
	}, ds.done
}
