package cachecli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLogTailCopiesEachByteOnce checks the copier behind -glide-log stderr:
// each file's new bytes, once, files in name order (glide's hourly names
// sort by time), a file that appears later included.
func TestLogTailCopiesEachByteOnce(t *testing.T) {
	dir := t.TempDir()
	var w bytes.Buffer
	tl := &logTail{dir: dir, w: &w, offsets: map[string]int64{}}
	tl.copyNew()
	assert.Empty(t, w.String(), "nothing logged yet")

	first := filepath.Join(dir, "glide.log.2026-12-02-09")
	require.NoError(t, os.WriteFile(first, []byte("WARN logger_core a\n"), 0o644))
	tl.copyNew()
	assert.Equal(t, "WARN logger_core a\n", w.String())
	tl.copyNew()
	assert.Equal(t, "WARN logger_core a\n", w.String(), "nothing new, nothing copied")

	f, err := os.OpenFile(first, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("WARN logger_core b\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "glide.log.2026-12-02-10"), []byte("WARN logger_core c\n"), 0o644))
	tl.copyNew()
	assert.Equal(t, "WARN logger_core a\nWARN logger_core b\nWARN logger_core c\n", w.String())
}

// TestGlideLogQuietAndErrors checks the -glide-log values that need no
// glide traffic: quiet needs no stop, and a directory is refused when glide
// is built in.
func TestGlideLogQuietAndErrors(t *testing.T) {
	for _, v := range []string{"", "off"} {
		stop, err := GlideLog(v, os.Stderr)
		require.NoError(t, err, v)
		stop()
	}
	stop, err := GlideLog(GlideLogStderr, os.Stderr)
	require.NoError(t, err)
	stop()
	stop() // idempotent
	if glideEngine() != nil {
		_, err := GlideLog(t.TempDir(), os.Stderr)
		assert.ErrorContains(t, err, "names a directory")
	}
	stop, err = GlideLog("", os.Stderr)
	require.NoError(t, err)
	stop()
}
