package main

import (
	"fmt"
	"io"
)

// applyCompat carries the 3.21 options the library takes into the
// client's Config: -m, --bind-dev (or host%dev), --cntl-ka and -F. A
// server takes them in listenConfig and serverConfig.
func applyCompat(o *options) {
	applyFile(o)
	c := &o.compat
	o.cfg.MPTCP = c.mptcp
	o.cfg.BindDevice = c.bindDev
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
	if c.serverAffinity >= 0 {
		warn("-A n,m (the server's core m)", "the library sends no server_affinity parameter")
	}
	if c.flowLabel != 0 {
		warn("-L", "the library has no IPv6 flow label setting")
	}
	if c.serverRate > 0 {
		warn("--server-bitrate-limit", "the library's server has no total rate limit over a time window")
	}
	if o.server {
		if o.idleTimeout > 0 && !o.oneOff {
			warn("--idle-timeout without -1", "this server never holds a stuck test slot to restart (every step has a deadline); with -1 it exits after that long idle")
		}
	}
}
