//go:build linux

package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/pathlab"
	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDNSPeersAgainstDnsmasq looks names up with Go's own resolver (as the
// agent built with CGO_ENABLED=0 does) against dnsmasq in a namespace:
// without --local, dnsmasq refuses the SRV query of a name it has only A
// records for (REFUSED, "server misbehaving") and the peers come from the
// A records, with the refusal noted; with --local=/np41.test/ it answers
// no data and the A records are the peers with nothing to note; a name
// with SRV records gives its targets with the records' ports, either way.
func TestDNSPeersAgainstDnsmasq(t *testing.T) {
	peertest.Root(t)
	dnsBin := peertest.Binary(t, "apt-get install dnsmasq (scripts/install-peers.sh)", "dnsmasq")
	for _, local := range []bool{false, true} {
		name := "without-local"
		if local {
			name = "with-local"
		}
		t.Run(name, func(t *testing.T) {
			pl := pathlab.New(t, &pathlab.Config{Prefix: "np41d"})
			if pl == nil || t.Skipped() {
				t.SkipNow()
			}
			l := &lab1k{Lab: pl, dir: t.TempDir()}
			hostsFile := "198.18.250.1 fleet.np41.test\n198.18.250.2 fleet.np41.test\n198.18.250.3 fleet.np41.test\n" +
				"198.18.251.1 n1.np41.test\n198.18.251.2 n2.np41.test\n"
			require.NoError(t, os.WriteFile(filepath.Join(l.dir, "hosts"), []byte(hostsFile), 0o644))
			more := []string{"--srv-host=srv.np41.test,n1.np41.test,7001", "--srv-host=srv.np41.test,n2.np41.test,7002"}
			if local {
				more = append(more, "--local=/np41.test/")
			}
			l.startDNS(t, dnsBin, more...)
			res := nsResolver(l.A, net.JoinHostPort(l.B.Addr.String(), "53"))

			d, err := newDNSPeers("fleet.np41.test.", 5201, 11111, res)
			require.NoError(t, err)
			d.own = ownIs()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ps, err := d.lookup(ctx)
			require.NoError(t, err)
			assert.Equal(t, []string{"198.18.250.1", "198.18.250.2", "198.18.250.3"}, hosts(ps))
			for _, p := range ps {
				assert.Equal(t, 11111, p.SockperfPort)
			}
			if local {
				assert.NoError(t, d.srvErr, "--local: no data, nothing to note")
			} else {
				require.Error(t, d.srvErr, "no upstream: the SRV query is refused")
				assert.Contains(t, d.srvErr.Error(), "server misbehaving")
				t.Logf("dnsmasq without --local answers the SRV query with: %v", d.srvErr)
			}

			s, err := newDNSPeers("srv.np41.test.", 5201, 11111, res)
			require.NoError(t, err)
			s.own = ownIs()
			ps, err = s.lookup(ctx)
			require.NoError(t, err)
			assert.ElementsMatch(t, []peer{{"198.18.251.1", 5201, 7001}, {"198.18.251.2", 5201, 7002}}, ps)
			assert.True(t, s.viaSRV)
		})
	}
}

// nsResolver is Go's resolver sending every query to server from h's
// namespace.
func nsResolver(h *pathlab.Host, server string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var c net.Conn
		err := h.Do(func() error {
			var err error
			c, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, server)
			return err
		})
		return c, err
	}}
}
