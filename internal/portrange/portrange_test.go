package portrange

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	lo, hi, err := Parse(strings.NewReader("32768\t60999\n"))
	require.NoError(t, err)
	assert.Equal(t, []int{32768, 60999}, []int{lo, hi})
	for _, in := range []string{"", "1", "5 4", "0 10", "1 70000", "a b", "1 2 3", "-1 2"} {
		_, _, err := Parse(strings.NewReader(in))
		assert.ErrorIs(t, err, ErrMalformed, "%q", in)
	}
}

func TestRead(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("portrange: the range is read from linux's /proc")
	}
	lo, hi, err := Read()
	require.NoError(t, err)
	assert.Positive(t, lo)
	assert.LessOrEqual(t, lo, hi)
}

// FuzzParse: parses or fails with ErrMalformed; a parsed range is ordered.
func FuzzParse(f *testing.F) {
	f.Add("32768\t60999\n")
	f.Add("1 1")
	f.Fuzz(func(t *testing.T, in string) {
		lo, hi, err := Parse(strings.NewReader(in))
		if err != nil {
			assert.ErrorIs(t, err, ErrMalformed)
			return
		}
		assert.LessOrEqual(t, lo, hi)
		assert.Positive(t, lo)
		assert.LessOrEqual(t, hi, 65535)
	})
}
