package iperfwire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLocalRefusalsRoundTrip: a sender's local_drops and local_retries
// survive the results exchange; a stock iperf3's results (results312) have
// neither, and decode as none; a clean stream writes neither key; a
// negative count is a protocol violation.
func TestLocalRefusalsRoundTrip(t *testing.T) {
	r, err := DecodeResults([]byte(results312))
	require.NoError(t, err)
	assert.Nil(t, r.Streams[0].LocalDrops)
	assert.Nil(t, r.Streams[0].LocalRetries)

	r.Streams[0].LocalDrops, r.Streams[0].LocalRetries = PtrInt(35000), PtrInt(12)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"local_drops":35000`)
	assert.Contains(t, string(b), `"local_retries":12`)
	back, err := DecodeResults(b)
	require.NoError(t, err)
	require.NotNil(t, back.Streams[0].LocalDrops)
	require.NotNil(t, back.Streams[0].LocalRetries)
	assert.Equal(t, Int(35000), *back.Streams[0].LocalDrops)
	assert.Equal(t, Int(12), *back.Streams[0].LocalRetries)

	r.Streams[0].LocalDrops, r.Streams[0].LocalRetries = nil, nil
	b, err = json.Marshal(r)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "local_")

	for _, key := range []string{"local_drops", "local_retries"} {
		bad := `{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":0,"streams":[` +
			`{"id":1,"bytes":1,"retransmits":0,"jitter":0,"errors":0,"packets":1,"` + key + `":-3}]}`
		_, err := DecodeResults([]byte(bad))
		assert.ErrorIs(t, err, ErrProtocol, key)
	}
}
