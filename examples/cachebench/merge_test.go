package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExpandDirs(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"shard-0.json", "shard-1.json", "notes.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("{}"), 0o600))
	}
	got, err := expandDirs([]string{dir, "other.json"})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "shard-0.json"), filepath.Join(dir, "shard-1.json"), "other.json"}, got)
	_, err = expandDirs([]string{t.TempDir()})
	assert.ErrorContains(t, err, "no *.json shard files")
}

func TestMergeUsage(t *testing.T) {
	var out, errb testBuf
	assert.Equal(t, 2, runMerge(nil, &out, &errb))
	assert.Contains(t, errb.String(), "no files")
	assert.Equal(t, 1, runMerge([]string{filepath.Join(t.TempDir(), "none.json")}, &out, &errb))
	assert.Contains(t, out.String(), "UNREADABLE")
}

type testBuf struct{ b []byte }

func (t *testBuf) Write(p []byte) (int, error) { t.b = append(t.b, p...); return len(p), nil }
func (t *testBuf) String() string              { return string(t.b) }
