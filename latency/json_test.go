package latency

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goldenResult is the result whose JSON and text testdata/*.golden.* hold,
// as written before Summary's fields became time.Duration (float
// microseconds then).
func goldenResult() PingPongResult {
	samples := []time.Duration{12345, 23456, 11111, 99999, 15000, 16001, 17003, 1234567, 14999, 15500, 12001}
	s := summarizeSamples(samples, 0)
	s.Dropped, s.Duplicated, s.OutOfOrder = 1, 2, 3
	raw := summarizeSamples(samples[:7], 95)
	return PingPongResult{Summary: s, Network: "udp", mode: "spin", messageSize: 64, Sent: 100, Received: 98,
		RunTime: 1250 * time.Millisecond, ValidTime: 800 * time.Millisecond, targetMPS: 1000, AchievedMPS: 80,
		replyEvery: 10, Late: 4, LateReplies: 5, Raw: &raw, CPU: 123 * time.Millisecond}
}

// orderedKeys returns the keys of a JSON object in the order written.
func orderedKeys(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	var keys []string
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
			} else {
				depth--
			}
		case string:
			if depth == 1 && dec.More() {
				keys = append(keys, v)
				var skip json.RawMessage
				require.NoError(t, dec.Decode(&skip))
			}
		}
	}
}

// The JSON of a result keeps the keys, their order and their units: the
// statistics that are whole nanoseconds (percentiles, min, max) and the
// counts are equal to the old output, the others (avg, std-dev, ...) within
// the half nanosecond they are now rounded to.
func TestPingPongResultJSONGolden(t *testing.T) {
	want, err := os.ReadFile("testdata/pingpong-result.golden.json")
	require.NoError(t, err)
	got, err := json.MarshalIndent(goldenResult(), "", "  ")
	require.NoError(t, err)
	assert.Equal(t, orderedKeys(t, want), orderedKeys(t, got))
	var w, g map[string]any
	require.NoError(t, json.Unmarshal(want, &w))
	require.NoError(t, json.Unmarshal(got, &g))
	compareJSON(t, w, g, "")

	var back PingPongResult
	require.NoError(t, json.Unmarshal(want, &back))
	again, err := json.Marshal(back)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(again, &g))
	compareJSON(t, w, g, "round trip ")
	assert.Equal(t, 1250*time.Millisecond, back.RunTime)
	assert.Equal(t, 15500*time.Nanosecond, back.P50)
	assert.Equal(t, "spin", back.mode)
	assert.Equal(t, 123*time.Millisecond, back.CPU)
}

func compareJSON(t *testing.T, want, got map[string]any, path string) {
	t.Helper()
	require.Len(t, got, len(want), path)
	for k, wv := range want {
		gv, ok := got[k]
		require.True(t, ok, "%s%s missing", path, k)
		switch w := wv.(type) {
		case map[string]any:
			compareJSON(t, w, gv.(map[string]any), path+k+".")
		case float64:
			switch k {
			case "avg_us", "stddev_us", "mean_ad_us", "median_ad_us", "siqr_us", "std_error_us", "ci_low_us", "ci_high_us":
				assert.InDelta(t, w, gv, halfNs, path+k)
			default:
				assert.Equal(t, w, gv, path+k)
			}
		default:
			assert.Equal(t, w, gv, path+k)
		}
	}
}

// sockperf's text form is unchanged, to the digit.
func TestSummaryTextGolden(t *testing.T) {
	want, err := os.ReadFile("testdata/summary.golden.txt")
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, goldenResult().WriteText(&b, "Round trip"))
	assert.Equal(t, string(want), b.String())
}

// A zero result writes every key, as before.
func TestPingPongResultJSONZero(t *testing.T) {
	b, err := json.Marshal(PingPongResult{})
	require.NoError(t, err)
	assert.Equal(t, []string{"observations", "dropped", "duplicated", "out_of_order", "min_us", "max_us", "avg_us",
		"stddev_us", "mean_ad_us", "median_ad_us", "siqr_us", "cv", "std_error_us", "ci_level", "ci_low_us", "ci_high_us",
		"p25_us", "p50_us", "p75_us", "p90_us", "p99_us", "p999_us", "p9999_us", "p99999_us", "network", "mode",
		"message_size_bytes", "sent", "received", "run_seconds", "valid_seconds", "achieved_mps"}, orderedKeys(t, b))
}

// FuzzPingPongResultJSON: whatever UnmarshalJSON accepts, MarshalJSON writes
// back in a form that reads as the same result.
func FuzzPingPongResultJSON(f *testing.F) {
	golden, err := os.ReadFile("testdata/pingpong-result.golden.json")
	require.NoError(f, err)
	for _, s := range []string{string(golden), "{}", `{"p50_us":1.5,"run_seconds":2}`, `{"raw":{"p99_us":-3}}`, `{"p50_us":1e300}`, "[]", "null"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r PingPongResult
		if json.Unmarshal(b, &r) != nil {
			return
		}
		out, err := json.Marshal(r)
		require.NoError(t, err)
		var again PingPongResult
		require.NoError(t, json.Unmarshal(out, &again))
		assert.Equal(t, r, again)
	})
}
