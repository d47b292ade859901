package main

import (
	"io"
	"os"

	"github.com/netperfkit/netperfkit/throughput"
)

// fileError is 3.21's IEFILE: a stream could not open the -F file.
type fileError struct{ err error }

func (e *fileError) Error() string { return "unable to open -F file: " + errnoText(e.err) }

func (e *fileError) Unwrap() error { return e.err }

// fileData is -F as 3.21 carries it out: every stream opens the file for
// itself, a sending one to read it from its start, a receiving one to write
// it from its start (created, or truncated, with mode 0600). With -P n each
// sending stream sends the whole file, and receiving streams write over one
// another, as in 3.21.
func fileData(name string) (send func(int) (io.Reader, error), receive func(int) (io.Writer, error)) {
	send = func(int) (io.Reader, error) {
		f, err := os.Open(name)
		if err != nil {
			return nil, &fileError{err: err}
		}
		return f, nil
	}
	receive = func(int) (io.Writer, error) {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, &fileError{err: err}
		}
		return f, nil
	}
	return send, receive
}

// applyFile sets a client's -F source and sink.
func applyFile(o *options) {
	if o.file != "" {
		o.cfg.SendFrom, o.cfg.ReceiveTo = fileData(o.file)
	}
}

// serverFile sets a server's -F source and sink. Unless --max-tests says
// otherwise, such a server runs one test at a time, as 3.21: tests at once
// would write over each other's file.
func serverFile(o *options, cfg *throughput.ServerConfig) {
	if o.file == "" {
		return
	}
	cfg.SendFrom, cfg.ReceiveTo = fileData(o.file)
	if o.maxTests == 0 {
		cfg.MaxTests = 1
	}
}
