package main

import (
	"fmt"
	"io"
	"os"
)

// applyCompat carries the 3.21 options the library takes into the
// client's Config: -m, --bind-dev (or host%dev), --cntl-ka, -L and -A's
// server core. A server takes the first three in listenConfig and
// serverConfig, and the last two from each client.
func applyCompat(o *options) {
	c := &o.compat
	o.cfg.MPTCP = c.mptcp
	o.cfg.BindDevice = c.bindDev
	o.cfg.FlowLabel = c.flowLabel
	if c.serverAffinity >= 0 {
		o.cfg.ServerAffinity = new(c.serverAffinity)
	}
	if c.cntlKA {
		ka := keepAlive(o)
		o.cfg.ControlKeepAlive = &ka
	}
}

// warnNotCarriedOut says which of 3.21's options were accepted and are
// carried out in part or not at all, and why: the throughput package has no
// setting for them yet (see README.md, "Options the library does not carry
// out yet").
func warnNotCarriedOut(o *options, errOut io.Writer) {
	c := &o.compat
	warn := func(opt, why string) {
		fmt.Fprintf(errOut, "iperf3: warning - %s is accepted, not carried out: %s\n", opt, why)
	}
	if c.file != "" {
		warn("-F", "the data is netperfkit's own payload, not the file's, and received data is not written to it"+
			map[bool]string{true: " (the test sends the file's size)", false: ""}[c.fileSize > 0])
	}
	if o.server {
		if o.idleTimeout > 0 && !o.oneOff {
			warn("--idle-timeout without -1", "this server never holds a stuck test slot to restart (every step has a deadline); with -1 it exits after that long idle")
		}
	}
}

// fileError is 3.21's IEFILE.
type fileError struct{ err error }

func (e *fileError) Error() string { return "unable to open -F file: " + errnoText(e.err) }

// openFile checks, as 3.21 does when its streams start, that a client that
// sends can read its -F file.
func openFile(o *options) error {
	if o.file == "" || o.cfg.Reverse {
		return nil
	}
	f, err := os.Open(o.file)
	if err != nil {
		return &fileError{err: err}
	}
	return f.Close()
}
