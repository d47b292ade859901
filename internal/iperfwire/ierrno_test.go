package iperfwire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestIErrnoMeaning: every code this package sends has a meaning, and the
// parameter codes are refusals while the server's own failures are not.
func TestIErrnoMeaning(t *testing.T) {
	for _, code := range []int{IErrDuration, IErrTotalRate, IErrUDPFile, IErrNumStreams, IErrBlockSize, IErrBufSize,
		IErrMSS, IErrOmit, IErrFile, IErrBadTOS, IErrListen, IErrRecvParams, IErrSetFlow, IErrAffinity, IErrAuth,
		IErrNoMsg, IErrStreams} {
		m, ok := IErrnoMeaning(code)
		assert.True(t, ok, "code %d", code)
		assert.NotEmpty(t, m, "code %d", code)
	}
	m, _ := IErrnoMeaning(IErrBlockSize)
	assert.Equal(t, "block size invalid", m)
	_, ok := IErrnoMeaning(999)
	assert.False(t, ok)
	for _, code := range []int{IErrBlockSize, IErrNumStreams, IErrTotalRate, IErrAuth, 121} {
		assert.True(t, IErrnoRefusal(code), "code %d", code)
	}
	for _, code := range []int{0, IErrListen, IErrStreams, IErrAffinity, IErrNoMsg, -1} {
		assert.False(t, IErrnoRefusal(code), "code %d", code)
	}
}
