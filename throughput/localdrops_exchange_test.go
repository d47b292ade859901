package throughput

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// exchangeRun is one side of a UDP test with one stream (id 1), which
// this side sends on when send is set, ended a second after it started.
func exchangeRun(t *testing.T, server, send bool) (*testRun, *flowStream) {
	t.Helper()
	cfg := withDefaults((&Config{UDP: true, Reverse: true}))
	e := newEngine(&cfg, !server)
	a, b := net.Pipe()
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	s := &flowStream{id: 1, send: send, udp: true, conn: a}
	e.streams = []*flowStream{s}
	tr := &testRun{cfg: &cfg, eng: e, server: server}
	tr.startT = time.Now().Add(-time.Second)
	tr.endT = tr.startT.Add(time.Second)
	return tr, s
}

// TestLocalRefusalsExchanged: in a reverse UDP test the server sends, and
// what its host refused after the omit period reaches the client's Result
// (the stream, the download summary, -J's sum_sent) through the results
// exchange; a server that refused nothing adds no key, as stock iperf3's
// results carry none.
func TestLocalRefusalsExchanged(t *testing.T) {
	srv, ss := exchangeRun(t, true, true)
	ss.omitSnap = streamSnap{packets: 100, localDrops: 5, localRetry: 1}
	ss.final = streamSnap{bytes: 1400 * 9000, packets: 9100, localDrops: 45, localRetry: 8}
	b, err := srv.resultsJSON(nil)
	require.NoError(t, err)
	var raw struct {
		Streams []map[string]any `json:"streams"`
	}
	require.NoError(t, json.Unmarshal(b, &raw))
	require.Len(t, raw.Streams, 1)
	assert.EqualValues(t, 40, raw.Streams[0]["local_drops"], "%s", b)
	assert.EqualValues(t, 7, raw.Streams[0]["local_retries"], "%s", b)

	remote, err := iperfwire.DecodeResults(b)
	require.NoError(t, err)
	cl, cs := exchangeRun(t, false, false)
	cs.final = streamSnap{bytes: 1400 * 9000, rx: udpRecvStats{Highest: 9000}}
	r := cl.result(remote)
	require.Len(t, r.Streams, 1)
	st := r.Streams[0]
	assert.True(t, st.Reverse)
	assert.Equal(t, int64(40), st.Sent.LocalDrops)
	assert.Equal(t, int64(7), st.Sent.LocalRetries)
	assert.Equal(t, int64(9000), st.Sent.Packets)
	assert.Zero(t, st.Received.LostPackets, "the server's refusals are not path loss")
	require.NotNil(t, r.Download)
	assert.Equal(t, int64(40), r.Download.Sent.LocalDrops)
	assert.Equal(t, int64(7), r.Download.Sent.LocalRetries)
	assert.True(t, r.Download.QueueLimited)
	assert.Nil(t, r.Upload)

	doc, err := iperfJSON(r)
	require.NoError(t, err)
	var j struct {
		End struct {
			SumSent map[string]any `json:"sum_sent"`
		} `json:"end"`
	}
	require.NoError(t, json.Unmarshal(doc, &j))
	assert.EqualValues(t, 40, j.End.SumSent["local_drops"], "%s", doc)
	assert.EqualValues(t, 7, j.End.SumSent["local_retries"], "%s", doc)

	// The text names the host whose queue it was.
	var txt strings.Builder
	txt.WriteString(extrasText(t, r))
	assert.Contains(t, txt.String(), "note: dropped by the server's host: 40 datagrams")
	assert.NotContains(t, txt.String(), "this host")

	// A sender its host never refused: no key on the wire, none merged.
	ss.omitSnap, ss.final = streamSnap{}, streamSnap{bytes: 1400, packets: 1}
	b, err = srv.resultsJSON(nil)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "local_")
	remote, err = iperfwire.DecodeResults(b)
	require.NoError(t, err)
	r = cl.result(remote)
	assert.Zero(t, r.Streams[0].Sent.LocalDrops)
	assert.Zero(t, r.Streams[0].Sent.LocalRetries)
	assert.False(t, r.Download.QueueLimited)
}

// TestKeepRateParam: a UDP client's UDPKeepRate reaches the server's
// Config through the parameters (netperfkit_keep_rate, absent without
// it, as in a stock client's), so a reverse test's sender drops instead
// of waiting when the client asked.
func TestKeepRateParam(t *testing.T) {
	for _, keep := range []bool{false, true} {
		c := withDefaults((&Config{UDP: true, Reverse: true, UDPKeepRate: keep}))
		b, err := json.Marshal(params(&c))
		require.NoError(t, err)
		assert.Equal(t, keep, strings.Contains(string(b), `"netperfkit_keep_rate":true`), "%s", b)
		p, err := iperfwire.DecodeParams(b)
		require.NoError(t, err)
		assert.Equal(t, keep, configFromParams(p, &ServerConfig{}).UDPKeepRate)
	}
	// A TCP test never asks.
	c := withDefaults((&Config{UDPKeepRate: true}))
	b, err := json.Marshal(params(&c))
	require.NoError(t, err)
	assert.NotContains(t, string(b), "keep_rate")
}

// TestLocalRefusalsExchangedBidir: in a bidir test each side sends one
// stream; the server's refusals land on the client's download (its stream
// 2), and the client's own on its upload, never mixed.
func TestLocalRefusalsExchangedBidir(t *testing.T) {
	side := func(server bool) (*testRun, *flowStream, *flowStream) {
		cfg := withDefaults((&Config{UDP: true, Bidir: true}))
		e := newEngine(&cfg, !server)
		a, b := net.Pipe()
		t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
		up := &flowStream{id: 1, send: !server, udp: true, conn: a}
		down := &flowStream{id: 2, send: server, udp: true, conn: a}
		e.streams = []*flowStream{up, down}
		tr := &testRun{cfg: &cfg, eng: e, server: server}
		tr.startT = time.Now().Add(-time.Second)
		tr.endT = tr.startT.Add(time.Second)
		return tr, up, down
	}
	srv, sUp, sDown := side(true)
	sUp.final = streamSnap{bytes: 1400 * 100, rx: udpRecvStats{Highest: 100}}
	sDown.final = streamSnap{bytes: 1400 * 200, packets: 200, localDrops: 9}
	b, err := srv.resultsJSON(nil)
	require.NoError(t, err)
	remote, err := iperfwire.DecodeResults(b)
	require.NoError(t, err)

	cl, cUp, cDown := side(false)
	cUp.final = streamSnap{bytes: 1400 * 100, packets: 100, localRetry: 4}
	cDown.final = streamSnap{bytes: 1400 * 200, rx: udpRecvStats{Highest: 200}}
	r := cl.result(remote)
	require.NotNil(t, r.Upload)
	require.NotNil(t, r.Download)
	assert.Equal(t, int64(4), r.Upload.Sent.LocalRetries)
	assert.Zero(t, r.Upload.Sent.LocalDrops)
	assert.Equal(t, int64(9), r.Download.Sent.LocalDrops)
	assert.Zero(t, r.Download.Sent.LocalRetries)
	var txt strings.Builder
	txt.WriteString(extrasText(t, r))
	assert.Contains(t, txt.String(), "note: this host's queue refused 4 datagrams")
	assert.Contains(t, txt.String(), "note: dropped by the server's host: 9 datagrams")
}
