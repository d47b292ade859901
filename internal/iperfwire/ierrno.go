package iperfwire

// ierrnoMeanings says in a few words what each of iperf3's i_errno values
// (src/iperf_api.h, 3.21) means, so that a client can say why a server
// refused or failed. The words are ours; iperf3's own texts, with their
// limits, are iperf_strerror's (examples/iperf3 prints those).
var ierrnoMeanings = map[int]string{
	1: "cannot be both server and client", 2: "neither client nor server", 3: "option is server only",
	4: "option is client only", 5: "test duration invalid", 6: "number of streams invalid",
	7: "block size invalid", 8: "socket buffer size invalid", 9: "report interval invalid",
	10: "TCP MSS invalid", 11: "sendfile not supported", 12: "omit time invalid",
	13: "option not implemented", 14: "unable to open the data file (-F)", 15: "burst count invalid",
	16: "more than one end condition (-t, -n, -k)", 17: "unable to open the log file", 18: "no SCTP support",
	19: "local port without a bind address", 20: "UDP block size invalid", 21: "TOS invalid",
	22: "client authentication settings invalid", 23: "server authentication settings invalid",
	24: "report format invalid", 25: "cannot be both reverse and bidirectional", 26: "port number invalid",
	27: "total required bandwidth is larger than server limit", 28: "rate averaging interval invalid",
	29: "skew threshold invalid", 30: "idle timeout invalid", 31: "receive timeout invalid",
	32: "receive timeout needs a receiving client", 33: "send timeout invalid",
	34: "cannot transfer file using UDP", 35: "authorized users file unreadable",
	36: "control connection keepalive settings invalid", 37: "duration above the server's maximum",
	38: "unit value invalid", 39: "skip-rx-copy not supported", 40: "DSCP invalid",
	100: "unable to create a new test", 101: "test initialization failed",
	102: "unable to start listener for connections", 103: "unable to connect",
	104: "unable to accept the connection", 105: "unable to send the cookie",
	106: "unable to receive the cookie", 107: "unable to write to the control connection",
	108: "unable to read from the control connection", 109: "control connection closed unexpectedly",
	110: "unknown control message", 111: "unable to send a control message",
	112: "unable to receive a control message", 113: "unable to send the parameters",
	114: "unable to receive the parameters", 115: "unable to package the results",
	116: "unable to send the results", 117: "unable to receive the results", 118: "select failed",
	119: "the client terminated", 120: "the server terminated", 121: "server busy running a test",
	122: "unable to set TCP_NODELAY", 123: "unable to set the TCP MSS", 124: "unable to set the socket buffer size",
	125: "unable to set the IP TOS", 126: "unable to set the IPv6 traffic class",
	127: "unable to set IPv6 flow label", 128: "unable to reuse the address",
	129: "unable to make the socket non-blocking", 130: "unable to set the socket window size",
	131: "protocol unknown", 132: "unable to set CPU affinity", 133: "unable to become a daemon",
	134: "unable to set TCP_CONGESTION", 135: "unable to write the PID file",
	136: "unable to set IPV6_V6ONLY", 137: "unable to set SCTP_DISABLE_FRAGMENTS",
	138: "unable to set the number of SCTP streams", 139: "unable to bind SCTP addresses",
	140: "unable to set the socket pacing rate", 141: "socket buffer size not set as asked",
	142: "test authorization failed", 143: "unable to bind to the device",
	144: "idle timeout for receiving data", 145: "unable to set don't-fragment",
	146: "binding to a device not supported", 147: "a device name is only for an IPv6 link-local address",
	148: "unable to set TCP_USER_TIMEOUT", 150: "unable to create a thread", 151: "unable to cancel a thread",
	152: "unable to join a thread", 153: "unable to initialize thread attributes",
	154: "unable to destroy thread attributes", 155: "unable to set SO_KEEPALIVE",
	156: "unable to set TCP_KEEPIDLE", 157: "unable to set TCP_KEEPINTVL", 158: "unable to set TCP_KEEPCNT",
	159: "unable to set a thread's signal mask", 160: "server test duration expired",
	200: "unable to create a stream", 201: "unable to initialize a stream",
	202: "unable to start the stream listener", 203: "unable to connect a stream",
	204: "unable to accept stream connection", 205: "unable to write to a stream",
	206: "unable to read from a stream", 207: "stream closed unexpectedly", 208: "stream id invalid",
	300: "unable to create a timer", 301: "unable to update a timer",
}

// IErrnoMeaning is what iperf3's i_errno code means, in a few words, and
// whether the code is known.
func IErrnoMeaning(code int) (string, bool) {
	m, ok := ierrnoMeanings[code]
	return m, ok
}

// IErrnoRefusal reports whether code is a refusal of the client's request
// (a parameter the server will not take, a busy server, failed
// credentials) rather than a failure of the server's own.
func IErrnoRefusal(code int) bool {
	return (code > 0 && code < 100) || code == 121 || code == IErrAuth
}
