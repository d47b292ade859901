package iperfauth

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzDecodeToken feeds arbitrary tokens to the decoder: it must never panic
// and every failure must be ErrToken.
func FuzzDecodeToken(f *testing.F) {
	k := key(f)
	for _, pad := range []Padding{OAEP, PKCS1v15} {
		tok, err := EncodeToken(&k.PublicKey, Credentials{User: "u", Password: "p", Unix: 1}, pad)
		require.NoError(f, err)
		f.Add(tok, pad == PKCS1v15)
	}
	f.Add("", false)
	f.Add("AAAA", true)
	f.Add(strings.Repeat("/", 344), false)
	f.Fuzz(func(t *testing.T, tok string, pkcs1 bool) {
		pad := OAEP
		if pkcs1 {
			pad = PKCS1v15
		}
		c, err := DecodeToken(k, tok, pad)
		if err != nil {
			assert.ErrorIs(t, err, ErrToken)
			return
		}
		assert.NotEmpty(t, c.User)
		assert.NotEmpty(t, c.Password)
	})
}

// FuzzScanCredentials checks the plaintext reader: no panic, and text this
// package writes reads back the same whenever it has no white space.
func FuzzScanCredentials(f *testing.F) {
	f.Add("user: a\npwd:  b\nts:   12", "a", "b", int64(12))
	f.Add("user:\x00", "", "", int64(-1))
	f.Add("user: a\npwd:  b\nts:   -", "x y", "p", int64(1<<62))
	f.Fuzz(func(t *testing.T, text, user, pw string, ts int64) {
		_, _ = scanCredentials(text)
		c := Credentials{User: user, Password: pw, Unix: ts}
		got, ok := scanCredentials(c.plaintext())
		if user != "" && pw != "" && !strings.ContainsAny(user+pw, " \t\n\v\f\r\x00") {
			require.True(t, ok, "%q", c.plaintext())
			assert.Equal(t, c, got)
		}
	})
}

// FuzzParseUsers checks that the users file parser never fails on content
// and that every entry it keeps came from a line with a comma.
func FuzzParseUsers(f *testing.F) {
	f.Add("alice," + PasswordHash("alice", "pw") + "\n# c\n\n,,\nbob,x,y\r\n")
	f.Add(strings.Repeat("a", 2000) + ",b")
	f.Add(",,,")
	f.Fuzz(func(t *testing.T, in string) {
		u, err := ParseUsers(strings.NewReader(in))
		require.NoError(t, err)
		for _, e := range u.entries {
			assert.NotEmpty(t, e.user)
			assert.NotEmpty(t, e.hash)
			assert.NotContains(t, e.user, ",")
			assert.NotContains(t, e.user+e.hash, "\n")
		}
	})
}
