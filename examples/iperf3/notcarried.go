package main

import (
	"fmt"
	"io"
)

// applyCompat carries the 3.21 options the library takes into the
// client's Config: -m, --bind-dev (or host%dev), --cntl-ka, -F, -L and
// -A's server core. A server takes the first four in listenConfig and
// serverConfig, and the last two from each client.
func applyCompat(o *options) {
	applyFile(o)
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

// warnNotCarriedOut says which of 3.21's options were accepted and do
// nothing here, and why. Every option 3.21 carries out is carried out;
// only --idle-timeout without -1 has nothing to do (see README.md).
func warnNotCarriedOut(o *options, errOut io.Writer) {
	warn := func(opt, why string) {
		fmt.Fprintf(errOut, "iperf3: warning - %s is accepted, not carried out: %s\n", opt, why)
	}
	if o.server && o.idleTimeout > 0 && !o.oneOff {
		warn("--idle-timeout without -1", "this server never holds a stuck test slot to restart (every step has a deadline); with -1 it exits after that long idle")
	}
}
