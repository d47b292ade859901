package runinfo_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/enaapicheck"
	"github.com/netperfkit/netperfkit/runinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAPINilAndZeroInputs calls every exported function with nil, zero and
// negative arguments: none panics or hangs, and each returns its documented
// result, naming the argument where one was refused.
func TestAPINilAndZeroInputs(t *testing.T) {
	for _, c := range []struct {
		name string
		call func(t *testing.T)
	}{
		{"Collect(nil ctx, nil cfg)", func(t *testing.T) {
			//lint:ignore SA1012 a nil ctx is what is tested
			m := runinfo.Collect(nil, nil)
			require.NotNil(t, m)
			assert.Nil(t, m.EC2)
			assert.Contains(t, m.EC2Note, "the instance metadata service was not asked: nil context.Context ctx")
			assert.NotEmpty(t, m.GoVersion, "the local part is read")
		}},
		{"Collect(negative IMDSTimeout)", func(t *testing.T) {
			m := runinfo.Collect(context.Background(), &runinfo.Config{IMDSTimeout: -time.Second})
			require.NotNil(t, m)
			assert.Nil(t, m.EC2)
			assert.Contains(t, m.EC2Note, "Config.IMDSTimeout is negative (-1s)")
		}},
		{"Collect(cancelled ctx)", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			m := runinfo.Collect(ctx, &runinfo.Config{Interface: "nope0"})
			require.NotNil(t, m)
			assert.Nil(t, m.EC2)
			require.NotNil(t, m.Interface)
			assert.NotEmpty(t, m.Interface.Note, "a missing interface is noted, not fatal")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			enaapicheck.Call(t, c.name, func() { c.call(t) })
		})
	}
}

// TestAPINilAndZeroReceivers calls every exported method on nil and zero
// values by reflection.
func TestAPINilAndZeroReceivers(t *testing.T) {
	got := enaapicheck.Methods(t, (*runinfo.Metadata)(nil), &runinfo.Metadata{},
		&runinfo.Config{}, &runinfo.EC2{}, &runinfo.Interface{})
	assert.ErrorContains(t, got["(*runinfo.Metadata)(nil).WriteText"][0].(error), "runinfo: WriteText: nil *Metadata")
	assert.ErrorContains(t, got["*runinfo.Metadata.WriteText"][0].(error), "runinfo: WriteText: nil io.Writer w")

	var b bytes.Buffer
	require.NoError(t, (&runinfo.Metadata{}).WriteText(&b), "a zero Metadata prints")
	assert.True(t, strings.HasPrefix(b.String(), "run metadata\n"))
}
