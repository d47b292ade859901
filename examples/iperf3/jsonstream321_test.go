package main

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/netperfkit/netperfkit/internal/peertest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyPaths flattens a JSON value into its key paths ("start.test_start.
// protocol"); array elements share one path ("intervals[].sum").
func keyPaths(prefix string, v any, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			into[p] = true
			keyPaths(p, e, into)
		}
	case []any:
		for _, e := range x {
			keyPaths(prefix+"[]", e, into)
		}
	}
}

// streamKeys reads --json-stream output: the event names in order (runs of
// one name collapsed) and the key paths of each event's data.
func streamKeys(t *testing.T, out string) ([]string, map[string]map[string]bool) {
	t.Helper()
	var order []string
	keys := map[string]map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Event string `json:"event"`
			Data  any    `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &ev), l)
		if len(order) == 0 || order[len(order)-1] != ev.Event {
			order = append(order, ev.Event)
		}
		if keys[ev.Event] == nil {
			keys[ev.Event] = map[string]bool{}
		}
		keyPaths("", ev.Data, keys[ev.Event])
	}
	return order, keys
}

// libraryGaps are the keys 3.21 writes that the library's iperf3 JSON
// (iperf3fmt.JSON) or its events do not carry; the test fails if any
// other key is missing, or if the tool writes a key 3.21 does not. None
// are left.
var libraryGaps = map[string]bool{}

// additions are the keys netperfkit adds to iperf3's documents on purpose
// (additive: iperf3's own keys stay as they are); a key path with one of
// them as an element is ours, any other key 3.21 does not write fails.
var additions = map[string]bool{"tcp_limits": true, "loss_ledger": true}

func isAddition(path string) bool {
	for _, el := range strings.FieldsFunc(path, func(r rune) bool { return r == '.' }) {
		if additions[strings.TrimSuffix(el, "[]")] {
			return true
		}
	}
	return false
}

func sorted(m map[string]bool) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// TestJSONStreamMatches321 compares the --json-stream events of this tool
// and of 3.21's client, key by key, for a TCP and a UDP run against 3.21.
func TestJSONStreamMatches321(t *testing.T) {
	bin := peertest.NewIPerf3(t)
	port := server321(t, bin)
	for _, shape := range []string{"", "-u -b 5M"} {
		t.Run(shape, func(t *testing.T) {
			args := append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "2", "--json-stream"}, strings.Fields(shape)...)
			want := run321(t, bin, args...)
			got, errOut, code := runTool321(args...)
			require.Equal(t, 0, code, errOut+got)
			wo, wk := streamKeys(t, want)
			goOrder, gk := streamKeys(t, got)
			assert.Equal(t, []string{"start", "interval", "end"}, wo)
			assert.Equal(t, wo, goOrder)
			for ev, wantKeys := range wk {
				var missing, extra []string
				for _, k := range sorted(wantKeys) {
					if !gk[ev][k] && !libraryGaps[ev+"."+k] {
						missing = append(missing, k)
					}
				}
				for _, k := range sorted(gk[ev]) {
					if !wantKeys[k] && !isAddition(k) {
						extra = append(extra, k)
					}
				}
				assert.Empty(t, missing, "%s: keys 3.21 writes that we do not", ev)
				assert.Empty(t, extra, "%s: keys we write that 3.21 does not", ev)
			}
		})
	}
}
