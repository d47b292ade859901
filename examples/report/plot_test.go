package main

import (
	"os"
	"path/filepath"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpectrumPoints(t *testing.T) {
	h := hdrhistogram.New(1, 60e9, 3)
	for i := 1; i <= 1000; i++ {
		require.NoError(t, h.RecordValue(int64(i)*1000)) // 1..1000 us
	}
	pts := spectrumPoints(h)
	require.NotEmpty(t, pts)
	assert.Equal(t, 1.0, pts[0].X)
	assert.InDelta(t, 1000, pts[len(pts)-1].X, 1e-9, "stops at 1/(1-p) = n")
	assert.InDelta(t, 999, pts[len(pts)-1].Y, 2, "p99.9 of 1..1000 us")
	for i := 1; i < len(pts); i++ {
		assert.GreaterOrEqual(t, pts[i].Y, pts[i-1].Y, "spectrum is monotonic")
	}
	assert.Nil(t, spectrumPoints(hdrhistogram.New(1, 10, 1)))
}

func TestPercentileTicks(t *testing.T) {
	ticks := percentileTicks{}.Ticks(1, 1000)
	labels := make([]string, len(ticks))
	for i, tk := range ticks {
		labels[i] = tk.Label
	}
	assert.Equal(t, []string{"0%", "90%", "99%", "99.9%"}, labels)
}

func TestSavePercentileSpectrum(t *testing.T) {
	h := hdrhistogram.New(1, 60e9, 3)
	for i := 1; i <= 500; i++ {
		require.NoError(t, h.RecordValue(int64(i)*100))
	}
	dir := t.TempDir()
	for _, name := range []string{"a.svg", "a.png"} {
		f := filepath.Join(dir, name)
		require.NoError(t, savePercentileSpectrum(f, "RTT", []spectrumSeries{{Name: "x", Hist: h}}))
		st, err := os.Stat(f)
		require.NoError(t, err)
		assert.Greater(t, st.Size(), int64(1000))
	}
	assert.Error(t, savePercentileSpectrum(filepath.Join(dir, "b.svg"), "RTT", nil))
}
