package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/netperfkit/netperfkit/internal/peertest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/throughput"
)

func TestParseOptionsAccepted(t *testing.T) {
	for _, tc := range []struct {
		args  string
		check func(t *testing.T, o *options)
	}{
		{"-c h", func(t *testing.T, o *options) {
			assert.Equal(t, "h", o.host)
			assert.Equal(t, 5201, o.port)
			assert.Equal(t, 10*time.Second, o.cfg.Duration, "iperf3's default -t")
			assert.Equal(t, iperfTCPBlockLen, o.cfg.BlockLen, "iperf3's 128 KiB TCP default")
			assert.Equal(t, 1, o.cfg.Streams)
			assert.True(t, o.cfg.UDP32BitCounters, "32-bit UDP counters unless --udp-counters-64bit")
			assert.Zero(t, o.cfg.Bitrate, "TCP unlimited by default")
			assert.Equal(t, -1, o.tos)
		}},
		{"-c h -u", func(t *testing.T, o *options) {
			assert.Equal(t, float64(iperfUDPBitrate), o.cfg.Bitrate, "UDP 1 Mbit/s by default")
			assert.Zero(t, o.cfg.BlockLen, "UDP length left to the library")
		}},
		{"-uRP4 -ch", func(t *testing.T, o *options) {
			assert.True(t, o.cfg.UDP && o.cfg.Reverse)
			assert.Equal(t, 4, o.cfg.Streams)
			assert.Equal(t, "h", o.host)
		}},
		{"--client=h --parallel=3 --time=5 --omit=1 --interval=0.5 --port=6000", func(t *testing.T, o *options) {
			assert.Equal(t, 3, o.cfg.Streams)
			assert.Equal(t, 5*time.Second, o.cfg.Duration)
			assert.Equal(t, time.Second, o.cfg.Omit)
			assert.Equal(t, 500*time.Millisecond, o.cfg.Interval)
			assert.Equal(t, 6000, o.port)
		}},
		{"-c h -i 0", func(t *testing.T, o *options) {
			assert.True(t, o.noIntervals)
			assert.Equal(t, wholeTest, o.cfg.Interval, "-i 0: one interval for the whole test, as 3.21")
		}},
		{"-c h -l 0", func(t *testing.T, o *options) {
			assert.Equal(t, iperfTCPBlockLen, o.cfg.BlockLen, "-l 0 is 3.21's default")
		}},
		{"-c h -u -l 0", func(t *testing.T, o *options) { assert.Zero(t, o.cfg.BlockLen, "-l 0: UDP length left to the library") }},
		{"-c h -u --jitter-clock read", func(t *testing.T, o *options) { assert.True(t, o.jitterRead) }},
		{"-s --jitter-clock=kernel", func(t *testing.T, o *options) { assert.False(t, o.jitterRead) }},
		{"-c h -I p.pid -d -A 0 -F none --json-stream --json-stream-full-output -L 0x5 -m --bind-dev lo --cntl-ka=30/5/3 --no-fq-socket-pacing", func(t *testing.T, o *options) {
			assert.Equal(t, "p.pid", o.pidfile)
			assert.Equal(t, debugMax, o.debug)
			assert.Equal(t, 0, o.affinity)
			assert.Equal(t, -1, o.serverAffinity)
			assert.Equal(t, "none", o.file)
			assert.True(t, o.jsonStreamFull && o.mptcp && o.cntlKA && o.noFQPacing)
			assert.Equal(t, 5, o.flowLabel)
			assert.Equal(t, "lo", o.bindDev)
			assert.Equal(t, []int{30, 5, 3}, []int{o.kaIdle, o.kaIntv, o.kaCount})
		}},
		{"-c h --debug=2 -A 1,3 --cntl-ka", func(t *testing.T, o *options) {
			assert.Equal(t, 2, o.debug)
			assert.Equal(t, 1, o.affinity)
			assert.Equal(t, 3, o.serverAffinity)
			assert.True(t, o.cntlKA)
			assert.Zero(t, o.kaIdle+o.kaIntv+o.kaCount, "bare --cntl-ka: system defaults")
		}},
		{"-c h --debug 2", func(t *testing.T, o *options) {
			assert.Equal(t, debugMax, o.debug, "as getopt's optional_argument: a separate word is not the level")
		}},
		{"-s -D --server-bitrate-limit 1G/2 --max-tests 1", func(t *testing.T, o *options) {
			assert.True(t, o.daemon)
			assert.Equal(t, 1e9, o.serverRate)
			assert.Equal(t, 2*time.Second, o.serverRateWin)
			assert.Equal(t, 1, o.maxTests)
		}},
		{"-c h%eth0 -B 10.0.0.1%lo", func(t *testing.T, o *options) {
			assert.Equal(t, "h", o.host)
			assert.Equal(t, "10.0.0.1", o.bind)
			assert.Equal(t, "lo", o.bindDev)
		}},
		{"-c fe80::1%eth0", func(t *testing.T, o *options) {
			assert.Equal(t, "fe80::1%eth0", o.host, "a link-local literal keeps its zone")
			assert.Empty(t, o.bindDev)
		}},
		{"-c h -b 0", func(t *testing.T, o *options) { assert.Equal(t, float64(throughput.Unlimited), o.cfg.Bitrate) }},
		{"-c h -b 10M/20", func(t *testing.T, o *options) {
			assert.Equal(t, 10e6, o.cfg.Bitrate)
			assert.Equal(t, 20, o.burst)
		}},
		{"-c h --bandwidth 1.5G", func(t *testing.T, o *options) { assert.Equal(t, 1.5e9, o.cfg.Bitrate) }},
		{"-c h -n 10M", func(t *testing.T, o *options) {
			assert.Equal(t, int64(10<<20), o.cfg.Bytes)
			assert.Zero(t, o.cfg.Duration, "-n replaces the default -t")
		}},
		{"-c h -k 1k", func(t *testing.T, o *options) { assert.Equal(t, int64(1024), o.cfg.Blocks) }},
		{"-c h -l 64K -w 1M -M 1400 -N -C cubic", func(t *testing.T, o *options) {
			assert.Equal(t, 64<<10, o.cfg.BlockLen)
			assert.Equal(t, 1<<20, o.cfg.Window)
			assert.Equal(t, 1400, o.cfg.MSS)
			assert.True(t, o.cfg.NoDelay)
			assert.Equal(t, "cubic", o.cfg.Congestion)
		}},
		{"-c h --linux-congestion reno", func(t *testing.T, o *options) { assert.Equal(t, "reno", o.cfg.Congestion) }},
		{"-c h --bidir --get-server-output --udp-counters-64bit", func(t *testing.T, o *options) {
			assert.True(t, o.cfg.Bidir && o.cfg.GetServerOutput)
			assert.False(t, o.cfg.UDP32BitCounters)
		}},
		{"-c h -S 0x34", func(t *testing.T, o *options) { assert.Equal(t, 0x34, o.tos) }},
		{"-c h -S 064", func(t *testing.T, o *options) { assert.Equal(t, 0x34, o.tos, "octal as strtol reads it") }},
		{"-c h --dscp ef", func(t *testing.T, o *options) { assert.Equal(t, 46<<2, o.tos) }},
		{"-c h --dscp 10", func(t *testing.T, o *options) { assert.Equal(t, 10<<2, o.tos) }},
		{"-c h -f M -J --logfile /tmp/x --forceflush -V", func(t *testing.T, o *options) {
			assert.Equal(t, byte('M'), o.format)
			assert.True(t, o.json && o.forceFlush && o.verbose)
			assert.Equal(t, "/tmp/x", o.logfile)
		}},
		{"-c h --json-stream", func(t *testing.T, o *options) { assert.True(t, o.json && o.jsonStream) }},
		{"-c h --timestamps", func(t *testing.T, o *options) { assert.Equal(t, "%c ", o.timestamps) }},
		{"-c h --timestamps=%T", func(t *testing.T, o *options) { assert.Equal(t, "%T", o.timestamps) }},
		{"-c h --timestamps %T", func(t *testing.T, o *options) {
			assert.Equal(t, "%c ", o.timestamps, "as getopt's optional_argument: a separate word is not the value")
		}},
		{"-c h -T tag --extra-data x -B 127.0.0.1 -4 --cport 7000 -Z --skip-rx-copy --gsro --fq-rate 1G --pacing-timer 2000 --connect-timeout 500 --repeating-payload --dont-fragment --snd-timeout 1000", func(t *testing.T, o *options) {
			assert.Equal(t, "tag", o.title)
			assert.Equal(t, "tag", o.cfg.Title)
			assert.Equal(t, "x", o.extraData)
			assert.Equal(t, "127.0.0.1", o.bind)
			assert.True(t, o.ipv4 && o.zerocopy && o.skipRxCopy && o.gsro && o.repeatingPayload && o.dontFragment)
			assert.Equal(t, 7000, o.cport)
			assert.Equal(t, 1e9, o.fqRate)
			assert.Equal(t, int64(2000), o.pacingTimer)
			assert.Equal(t, 500*time.Millisecond, o.cfg.ConnectTimeout)
			assert.Equal(t, time.Second, o.sndTimeout)
		}},
		{"-c h -R --rcv-timeout 5000", func(t *testing.T, o *options) { assert.Equal(t, 5*time.Second, o.rcvTimeout) }},
		{"-c h --username u --rsa-public-key-path k.pem", func(t *testing.T, o *options) {
			assert.Equal(t, "u", o.username)
			assert.Equal(t, "k.pem", o.rsaPublicKeyPath)
		}},
		{"-s -1 --idle-timeout 30 --server-max-duration 60 --rsa-private-key-path p.pem --authorized-users-path u.csv --time-skew-threshold 5 --use-pkcs1-padding", func(t *testing.T, o *options) {
			assert.True(t, o.server && o.oneOff && o.usePKCS1Padding)
			assert.Equal(t, 30*time.Second, o.idleTimeout)
			assert.Equal(t, time.Minute, o.serverMaxDuration)
			assert.Equal(t, 5*time.Second, o.skewThreshold)
		}},
		{"-s -p 6001 -6", func(t *testing.T, o *options) { assert.True(t, o.server && o.ipv6) }},
		{"--in-process --rtt local -t 1", func(t *testing.T, o *options) { assert.True(t, o.inProcess) }},
		{"-c h extra operands are ignored", func(t *testing.T, o *options) { assert.Equal(t, "h", o.host) }},
		{"-v", func(t *testing.T, o *options) { assert.True(t, o.showVersion) }},
		{"--help", func(t *testing.T, o *options) { assert.True(t, o.help) }},
	} {
		t.Run(tc.args, func(t *testing.T) {
			o, err := parseOptions(strings.Fields(tc.args))
			require.NoError(t, err)
			tc.check(t, o)
		})
	}
}

func TestParseOptionsRefused(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"--bogus", "unrecognized option '--bogus'"},
		{"-x", "invalid option -- 'x'"},
		{"-c", "option requires an argument -- 'c'"},
		{"-c h --time", "option '--time' requires an argument"},
		{"", "parameter error - must either be a client (-c) or server (-s)"},
		{"-s -c h", "parameter error - cannot be both server and client"},
		{"-c h -s", "parameter error - cannot be both server and client"},
		{"-c h -p 0", "parameter error - port number must be between 1 and 65535 inclusive"},
		{"-c h -p x", "parameter error - port number must be between 1 and 65535 inclusive"},
		{"-c h -f x", "parameter error - bad format specifier (valid formats are in the set [kmgtKMGT])"},
		{"-c h -i 0.05", "parameter error - invalid report interval (min = 0.1, max = 60 seconds)"},
		{"-c h -i 61", "parameter error - invalid report interval (min = 0.1, max = 60 seconds)"},
		{"-c h -P 0", "parameter error - invalid number of parallel streams (min = 1, max = 128)"},
		{"-c h -P 129", "parameter error - invalid number of parallel streams (min = 1, max = 128)"},
		{"-c h -t 86401", "parameter error - test duration valid values are 0 to 86400 seconds"},
		{"-c h -t abc", "parameter error - test duration valid values are 0 to 86400 seconds"},
		{"-c h -R --bidir", "parameter error - cannot be both reverse and bidirectional"},
		{"-c h -b 1M/2000", "parameter error - invalid burst count (maximum = 1000)"},
		{"-c h -b 10X", "parameter error - invalid unit value or suffix: '10X'"},
		{"-c h -n abc", "parameter error - invalid unit value or suffix: 'abc'"},
		{"-c h -w 1G", "parameter error - socket buffer size too large (maximum = 536870912 bytes)"},
		{"-c h -M 40000", "parameter error - TCP MSS too large (maximum = 32767 bytes)"},
		{"-c h -S 256", "parameter error - bad TOS value (must be between 0 and 255 inclusive)"},
		{"-c h --dscp zz", "parameter error - bad DSCP value"},
		{"-c h -O 601", "parameter error - bogus value for --omit (maximum = 600 seconds)"},
		{"-c h --jitter-clock wall", `jitter clock "wall": want kernel or read`},
		{"-c h -l 2M", "parameter error - block size too large (maximum = 1048576 bytes)"},
		{"-c h -u -l 8", "parameter error - block size invalid (minimum = 16 bytes, maximum = 65507 bytes)"},
		{"-c h -t 5 -n 1M", "parameter error - only one test end condition (-t, -n, -k) may be specified"},
		{"-c h -n 1M -k 10", "parameter error - only one test end condition (-t, -n, -k) may be specified"},
		{"-c h -1", "parameter error - some option you are trying to set is server only"},
		{"-c h --rsa-private-key-path k", "parameter error - some option you are trying to set is server only"},
		{"-c h --time-skew-threshold 5", "parameter error - some option you are trying to set is server only"},
		{"-s -u", "parameter error - some option you are trying to set is client only"},
		{"-s -t 5", "parameter error - some option you are trying to set is client only"},
		{"-s --username u", "parameter error - some option you are trying to set is client only"},
		{"-c h --username u", "parameter error - you must specify a username, password, and path to a valid RSA public key"},
		{"-s --rsa-private-key-path k", "parameter error - you must specify a path to a valid RSA private key and a user credential file"},
		{"-s --time-skew-threshold 0", "parameter error - skew threshold must be a positive number"},
		{"-s --idle-timeout 0", "parameter error - idle timeout parameter is not positive or larger than allowed limit"},
		{"-c h --rcv-timeout 50", "parameter error - receive timeout value is incorrect or not in range"},
		{"-c h --rcv-timeout 5000", "parameter error - client receive timeout is valid only in receiving mode"},
		{"-c h --snd-timeout -1", "parameter error - send timeout value is incorrect or not in range"},
		{"-c h -D", "parameter error - some option you are trying to set is server only"},
		{"-c h --max-tests 2", "parameter error - some option you are trying to set is server only"},
		{"-s -A 1,2", "parameter error - some option you are trying to set is client only"},
		{"-s -L 5", "parameter error - some option you are trying to set is client only"},
		{"-c h -A x", "parameter error - unable to set CPU affinity"},
		{"-c h -A 1025", "parameter error - unable to set CPU affinity"},
		{"-c h -L 0", "parameter error - unable to set IPv6 flow label"},
		{"-c h -L 0x100000", "parameter error - unable to set IPv6 flow label"},
		{"-c h --cntl-ka=5/2/3", "parameter error - control connection Keepalive period should be larger"},
		{"-s --server-bitrate-limit 1M/0.01", "parameter error - invalid time interval for calculating average data rate"},
		{"-c h -u -F x", "parameter error - cannot transfer file using UDP"},
		{"-s --max-tests 0", "parameter error - --max-tests must be a positive number"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			_, err := parseOptions(strings.Fields(tc.args))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestUnitSize(t *testing.T) {
	for in, want := range map[string]float64{"10": 10, "1k": 1024, "1K": 1024, "1.5M": 1.5 * (1 << 20), "2g": 2 << 30, "1T": 1 << 40, "10Mbytes": 10 << 20, "1e3": 1000} {
		got, err := unitSize(in, 1024)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	got, err := unitRate("5M")
	require.NoError(t, err)
	assert.Equal(t, 5e6, got)
	for _, in := range []string{"", "x", "10x", "-1", "NaN", "Inf"} {
		_, err := unitSize(in, 1024)
		assert.Error(t, err, in)
	}
}

// FuzzParseOptions: no command line panics, and every refusal is one of the
// two kinds the program prints.
func FuzzParseOptions(f *testing.F) {
	for _, s := range []string{"-c h -uRP4", "-s -1 -p 5201", "--timestamps=%c -c h", "-c h -b 1M/10 -n 1k", "--dscp=af11 -c h", "-c", "---x", "-=", "--=x",
		"-s --allowed-clients 10.0.0.0/8,::1 --max-tests-per-client 2", "-s --allowed-clients=,/", "-c h -B 127.0.0.1 --cport 5000 -S 0x20 --extra-data x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		_, err := parseOptions(strings.Fields(line))
		if err == nil {
			return
		}
		switch err.(type) {
		case *paramError, *optionError:
		default:
			t.Fatalf("unexpected error type %T: %v", err, err)
		}
	})
}

// TestUsageErrorsMatch321 compares what this tool and iperf3 3.21 print,
// and their exit statuses, for command lines both refuse before connecting.
func TestUsageErrorsMatch321(t *testing.T) {
	bin := peertest.NewIPerf3(t)
	for _, line := range []string{
		"--bogus", "-x", "-c", "-t", "", "-s -c 127.0.0.1", "-c 127.0.0.1 -p 0", "-c 127.0.0.1 -f x",
		"-c 127.0.0.1 -i 0.05", "-c 127.0.0.1 -P 0", "-c 127.0.0.1 -P 129", "-c 127.0.0.1 -t 86401",
		"-c 127.0.0.1 -R --bidir", "-c 127.0.0.1 --bidir -R", "-c 127.0.0.1 -b 1M/2000", "-c 127.0.0.1 -b 10X",
		"-c 127.0.0.1 -w 1G", "-c 127.0.0.1 -M 40000", "-c 127.0.0.1 -S 256", "-c 127.0.0.1 --dscp zz",
		"-c 127.0.0.1 -O 601", "-c 127.0.0.1 -l 2M", "-c 127.0.0.1 -u -l 8", "-c 127.0.0.1 -t 5 -n 1M",
		"-c 127.0.0.1 -1", "-s -u", "-s -P 2", "-c 127.0.0.1 --username u", "-s --rsa-private-key-path k",
		"-s --time-skew-threshold 0", "-s --idle-timeout 0", "-c 127.0.0.1 --rcv-timeout 50",
		"-c 127.0.0.1 --rcv-timeout 5000", "-c 127.0.0.1 --use-pkcs1-padding",
		"-c 127.0.0.1 -D", "-s -A 1,2", "-c 127.0.0.1 -A x", "-c 127.0.0.1 -A 1,2000", "-c 127.0.0.1 -L 0",
		"-c 127.0.0.1 --cntl-ka=5/2/3", "-s --server-bitrate-limit 1M/0.01", "-s --server-bitrate-limit 1X",
		"-c 127.0.0.1 -u -F x", "-s -L 5", "-c 127.0.0.1 -d3",
	} {
		t.Run(line, func(t *testing.T) {
			args := strings.Fields(line)
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "IPERF3_PASSWORD=x")
			var want bytes.Buffer
			cmd.Stdout, cmd.Stderr = &want, &want
			wantCode := 0
			if err := cmd.Run(); err != nil {
				ee, ok := err.(*exec.ExitError)
				require.True(t, ok, "%v", err)
				wantCode = ee.ExitCode()
			}
			if line == "-c 127.0.0.1 --use-pkcs1-padding" {
				// 3.21 marks --use-pkcs1-padding server-only, so its
				// client cannot talk to a server that uses it; this tool
				// accepts it on both sides (it is a server setting the
				// client must match).
				assert.Equal(t, 1, wantCode)
				assert.Contains(t, want.String(), "some option you are trying to set is server only")
				return
			}
			var got bytes.Buffer
			code := run(context.Background(), append([]string{bin}, args...), &got, &got)
			assert.Equal(t, wantCode, code)
			assert.Equal(t, want.String(), got.String())
		})
	}
}

// TestHelpListsEveryOption: every option the parser accepts is in --help.
func TestHelpListsEveryOption(t *testing.T) {
	fs := newFlagSet(&options{})
	fs.VisitAll(func(f *pflag.Flag) {
		assert.Contains(t, usageLong, "--"+f.Name, "--help does not list --%s", f.Name)
		if f.Shorthand != "" {
			assert.Contains(t, usageLong, "  -"+f.Shorthand+", --"+f.Name, "--help does not list -%s", f.Shorthand)
		}
	})
}
