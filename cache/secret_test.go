package cache

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slogged logs the values through a handler of log/slog and returns the line.
func slogged[H slog.Handler](newHandler func(io.Writer, *slog.HandlerOptions) H, vals ...any) string {
	var b bytes.Buffer
	slog.New(newHandler(&b, nil)).Info("x", "v", vals)
	return b.String()
}

func TestSecretNeverPrinted(t *testing.T) {
	s := Secret("hunter2")
	type holder struct {
		Password Secret `json:"password"`
	}
	h := holder{s}
	for _, out := range []string{
		fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s %q %x %X %d", s, h, h, s, s, s, s, s),
		fmt.Sprintf("%#v", s), slogged(slog.NewTextHandler, s, h), slogged(slog.NewJSONHandler, s, h),
	} {
		assert.NotContains(t, out, "hunter2")
		assert.NotContains(t, out, hex.EncodeToString([]byte("hunter2")))
	}
	b, err := json.Marshal(h)
	require.NoError(t, err)
	assert.Equal(t, `{"password":"[redacted]"}`, string(b))
	assert.Equal(t, "hunter2", s.Reveal())
}

// No secret of an Endpoint, its Password or what its Credentials hand out,
// shows through json, slog's handlers or any fmt verb, by value or by
// pointer; a failing Credentials does not put it in the error either.
func TestEndpointSecretsNeverPrinted(t *testing.T) {
	const password, token = "pw-hunter2", "tok-hunter3"
	creds := func(context.Context) (string, Secret, error) { return "app", token, nil }
	ep := Endpoint{Addr: "c.example:6379", TLS: true, User: "app", Password: password, Credentials: creds}
	var outs []string
	for _, v := range []any{ep, &ep} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
			outs = append(outs, fmt.Sprintf(verb, v))
		}
		b, err := json.Marshal(v)
		require.NoError(t, err)
		outs = append(outs, string(b), slogged(slog.NewTextHandler, v), slogged(slog.NewJSONHandler, v))
	}
	for _, out := range outs {
		for _, s := range []string{password, token} {
			require.NotContains(t, out, s)
			require.NotContains(t, out, hex.EncodeToString([]byte(s)))
		}
	}
	assert.Equal(t, "c.example:6379 cluster=false tls=true auth=credentials:app", ep.String())
	b, err := json.Marshal(ep)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"Password":"[redacted]"`)
	assert.NotContains(t, string(b), "Credentials", "a func is left out of JSON")
}
