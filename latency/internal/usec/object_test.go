package usec

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type sample struct {
	n    int64
	d    time.Duration
	s    time.Duration
	name string
	opt  time.Duration
	p    *int
}

func (x *sample) fields() []Field {
	return []Field{Value("n", &x.n), Us("d_us", &x.d), Seconds("s_seconds", &x.s), OmitEmpty("name", &x.name),
		UsOmitEmpty("opt_us", &x.opt), OmitEmpty("p", &x.p)}
}

func TestObject(t *testing.T) {
	seven := 7
	x := sample{n: 3, d: 1500 * time.Nanosecond, s: 1250 * time.Millisecond, p: &seven}
	b, err := Marshal(x.fields()...)
	require.NoError(t, err)
	// In the fields' order, as encoding/json writes a struct's, empty
	// optional ones left out.
	assert.Equal(t, `{"n":3,"d_us":1.5,"s_seconds":1.25,"p":7}`, string(b))
	var back sample
	require.NoError(t, Unmarshal(b, back.fields()...))
	assert.Equal(t, x, back)
	require.Error(t, Unmarshal([]byte(`{"d_us":"x"}`), back.fields()...))
	require.Error(t, Unmarshal([]byte(`[`), back.fields()...))
}

// FuzzUnmarshal: any input decodes or fails without a panic, and what
// decodes writes and reads back the same.
func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(`{"n":3,"d_us":1.5,"s_seconds":1.25,"p":7}`))
	f.Add([]byte(`{"d_us":1e300,"opt_us":-0.0005}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var x sample
		if Unmarshal(b, x.fields()...) != nil {
			return
		}
		out, err := Marshal(x.fields()...)
		if err != nil {
			t.Fatalf("decoded %q, cannot write it back: %v", b, err)
		}
		var y sample
		if err := Unmarshal(out, y.fields()...); err != nil {
			t.Fatalf("cannot read back %s: %v", out, err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %s", out)
		}
	})
}
