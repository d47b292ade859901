package throughput

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlowLabelAffinityParams: Config.FlowLabel and ServerAffinity travel
// in 3.21's keys, flowlabel and server_affinity, a server checks them
// against 3.21's bounds with 3.21's codes, and unset ones are not sent.
func TestFlowLabelAffinityParams(t *testing.T) {
	c := withDefaults((&Config{ServerAffinity: new(1), SocketOptions: SocketOptions{FlowLabel: 0x12345}}))
	require.NoError(t, validate(&c))
	b, err := json.Marshal(params(&c))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"flowlabel":74565`)
	assert.Contains(t, string(b), `"server_affinity":1`)
	p, err := iperfwire.DecodeParams(b)
	require.NoError(t, err)
	srv := configFromParams(p, &ServerConfig{})
	assert.Equal(t, 0x12345, srv.FlowLabel)
	require.NotNil(t, srv.ServerAffinity)
	assert.Equal(t, 1, *srv.ServerAffinity)

	// CPU 0 is a CPU, not "unset".
	zero := withDefaults((&Config{ServerAffinity: new(0)}))
	b, _ = json.Marshal(params(&zero))
	assert.Contains(t, string(b), `"server_affinity":0`)
	def := withDefaults((&Config{}))
	b, _ = json.Marshal(params(&def))
	assert.NotContains(t, string(b), "flowlabel")
	assert.NotContains(t, string(b), "server_affinity")
	assert.Nil(t, configFromParams(&iperfwire.Params{Parallel: 1}, &ServerConfig{}).ServerAffinity)

	for _, bad := range []Config{{SocketOptions: SocketOptions{FlowLabel: -1}}, {SocketOptions: SocketOptions{FlowLabel: maxFlowLabel + 1}}, {ServerAffinity: new(-1)}, {ServerAffinity: new(1025)}} {
		d := withDefaults(&bad)
		assert.Error(t, validate(&d), "%+v", bad)
	}
	sc := &ServerConfig{MaxStreams: 1, MaxDuration: time.Hour}
	code, err := checkParams(sc, &iperfwire.Params{Parallel: 1, FlowLabel: maxFlowLabel + 1})
	assert.Equal(t, iperfwire.IErrSetFlow, code)
	assert.ErrorIs(t, err, ErrLimit)
	assert.ErrorIs(t, err, ErrFlowLabel)
	assert.ErrorIs(t, &ServerError{IErrno: code}, ErrFlowLabel, "as a client sees it")
	code, err = checkParams(sc, &iperfwire.Params{Parallel: 1, ServerAffinity: iperfwire.PtrInt(-1)})
	assert.Equal(t, iperfwire.IErrAffinity, code)
	assert.ErrorIs(t, err, ErrLimit)
	assert.ErrorIs(t, err, ErrAffinity)
	_, err = checkParams(sc, &iperfwire.Params{Parallel: 1, FlowLabel: maxFlowLabel, ServerAffinity: iperfwire.PtrInt(maxAffinity)})
	assert.NoError(t, err)
}
