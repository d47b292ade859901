package iperfauth

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	keyOnce sync.Once
	testKey *rsa.PrivateKey
)

// key returns one 2048-bit key for the whole package's tests (generation
// is slow under -race).
func key(tb testing.TB) *rsa.PrivateKey {
	tb.Helper()
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		testKey = k
	})
	return testKey
}

func TestPasswordHash(t *testing.T) {
	// Pinned: printf '{mario}rossi' | sha256sum (iperf3's README example user).
	assert.Equal(t, "bf7a49a846d44b454a5d11e7acfaf13d138bbe0b7483aa3e050879700572709b", PasswordHash("mario", "rossi"))
}

func TestTokenRoundTrip(t *testing.T) {
	k := key(t)
	for _, pad := range []Padding{OAEP, PKCS1v15} {
		c := Credentials{User: "alice", Password: "s3cr3t!", Unix: 1764512345}
		tok, err := EncodeToken(&k.PublicKey, c, pad)
		require.NoError(t, err, pad)
		got, err := DecodeToken(k, tok, pad)
		require.NoError(t, err, pad)
		assert.Equal(t, c, got, pad)
		other := OAEP
		if pad == OAEP {
			other = PKCS1v15
		}
		_, err = DecodeToken(k, tok, other)
		assert.ErrorIs(t, err, ErrToken, "a token made with %s does not decode with %s", pad, other)
	}
}

func TestScanCredentials(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Credentials
		ok   bool
	}{
		{"user: a\npwd:  b\nts:   12", Credentials{"a", "b", 12}, true},
		{"user:a pwd:b ts:-3 trailing", Credentials{"a", "b", -3}, true},
		{"user: a\npwd:  b\nts:   +7x", Credentials{"a", "b", 7}, true},
		{"user: a\npwd:  b\nts:   99999999999999999999", Credentials{"a", "b", 1<<63 - 1}, true},
		{"user: a\npwd:  two words\nts:   12", Credentials{}, false}, // sscanf stops at the space
		{"user: \npwd:  b\nts:   12", Credentials{}, false},          // empty user eats "pwd:"
		{"user: a\npwd:  b\nts:   ", Credentials{}, false},
		{"user: a\x00\npwd:  b\nts:   1", Credentials{}, false},
		{"usr: a\npwd:  b\nts:   1", Credentials{}, false},
		{"", Credentials{}, false},
	} {
		got, ok := scanCredentials(tc.in)
		assert.Equal(t, tc.ok, ok, "%q", tc.in)
		if tc.ok {
			assert.Equal(t, tc.want, got, "%q", tc.in)
		}
	}
}

func TestDecodeTokenErrors(t *testing.T) {
	k := key(t)
	for _, tok := range []string{"", "!!!", "aGVsbG8=", strings.Repeat("A", 344)} {
		_, err := DecodeToken(k, tok, OAEP)
		assert.ErrorIs(t, err, ErrToken, "%q", tok)
	}
	_, err := DecodeToken(nil, "x", OAEP)
	assert.ErrorIs(t, err, ErrSetup)
	_, err = EncodeToken(&k.PublicKey, Credentials{User: "u", Password: strings.Repeat("p", 300)}, OAEP)
	require.Error(t, err, "a 2048-bit key holds at most 214 bytes with OAEP")
	assert.NotContains(t, err.Error(), "ppp", "the password is never in an error")
}

func TestParseUsers(t *testing.T) {
	in := "# comment,with comma\r\n" +
		"\n" +
		"nocomma\n" +
		"alice," + PasswordHash("alice", "pw") + "\r\n" +
		",bob," + PasswordHash("bob", "pw") + ",extra\n" + // strtok skips the empty first field
		"carol,\n" + // no hash: skipped
		" dave," + PasswordHash(" dave", "pw") + "\n" + // the space belongs to the name
		"erin," + PasswordHash("erin", "pw") // no final newline
	u, err := ParseUsers(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, 4, u.Len())
	assert.True(t, u.Allowed("alice", "pw"))
	assert.False(t, u.Allowed("alice", "PW"))
	assert.True(t, u.Allowed("bob", "pw"))
	assert.False(t, u.Allowed("carol", ""))
	assert.False(t, u.Allowed("dave", "pw"))
	assert.True(t, u.Allowed(" dave", "pw"))
	assert.True(t, u.Allowed("erin", "pw"))
	assert.False(t, u.Allowed("# comment", "with comma"))
	var none *Users
	assert.False(t, none.Allowed("alice", "pw"))
}

func TestParseUsersLongLine(t *testing.T) {
	// fgets reads 1023 bytes at a time: the rest of a long line is a line
	// of its own, as in iperf3.
	long := strings.Repeat("x", 1023) + "zed," + PasswordHash("zed", "pw") + "\n"
	u, err := ParseUsers(strings.NewReader(long))
	require.NoError(t, err)
	assert.True(t, u.Allowed("zed", "pw"))
}

func TestVerifier(t *testing.T) {
	k := key(t)
	dir := t.TempDir()
	users := filepath.Join(dir, "users.csv")
	require.NoError(t, os.WriteFile(users, []byte("alice,"+PasswordHash("alice", "pw")+"\n"), 0o600))
	now := time.Unix(1_800_000_000, 0)
	v := &Verifier{Key: k, UsersPath: users, now: func() time.Time { return now }}
	tok := func(user, pw string, ts int64) string {
		s, err := EncodeToken(&k.PublicKey, Credentials{User: user, Password: pw, Unix: ts}, OAEP)
		require.NoError(t, err)
		return s
	}
	good := tok("alice", "pw", now.Unix())
	for _, tc := range []struct {
		name  string
		token string
		want  error
	}{
		{"right", good, nil},
		{"replay inside the window (3.21 keeps no replay cache)", good, nil},
		{"10 s behind is inside", tok("alice", "pw", now.Unix()-10), nil},
		{"10 s ahead is inside", tok("alice", "pw", now.Unix()+10), nil},
		{"11 s behind", tok("alice", "pw", now.Unix()-11), ErrSkew},
		{"11 s ahead", tok("alice", "pw", now.Unix()+11), ErrSkew},
		{"wrong password", tok("alice", "nope", now.Unix()), ErrDenied},
		{"unknown user", tok("mallory", "pw", now.Unix()), ErrDenied},
		{"no token", "", ErrNoToken},
		{"garbage", "AAAA", ErrToken},
	} {
		user, err := v.Verify(tc.token)
		if tc.want == nil {
			require.NoError(t, err, tc.name)
			assert.Equal(t, "alice", user, tc.name)
			continue
		}
		require.ErrorIs(t, err, tc.want, tc.name)
		assert.NotContains(t, err.Error(), "nope", "no password in errors")
	}
	// The file is read per check: a user added now is accepted next time.
	require.NoError(t, os.WriteFile(users, []byte("mallory,"+PasswordHash("mallory", "pw")+"\n"), 0o600))
	_, err := v.Verify(tok("mallory", "pw", now.Unix()))
	require.NoError(t, err)
	require.NoError(t, os.Remove(users))
	_, err = v.Verify(good)
	assert.ErrorIs(t, err, ErrSetup)
	v2 := &Verifier{Key: k, Users: &Users{}, SkewThreshold: 30 * time.Second, now: v.now}
	_, err = v2.Verify(tok("alice", "pw", now.Unix()-25))
	assert.ErrorIs(t, err, ErrDenied, "inside a 30 s threshold, refused only for the user")
	_, err = (*Verifier)(nil).Verify(good)
	assert.True(t, errors.Is(err, ErrSetup))
}

func TestParseKeys(t *testing.T) {
	k := key(t)
	spki, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	pkcs8, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	enc := func(typ string, b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}) }
	junk := enc("CERTIFICATE", []byte("x"))
	for _, data := range [][]byte{enc("PUBLIC KEY", spki), enc("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&k.PublicKey)), append(junk, enc("PUBLIC KEY", spki)...)} {
		pub, err := ParsePublicKeyPEM(data)
		require.NoError(t, err)
		assert.True(t, pub.Equal(&k.PublicKey))
	}
	for _, data := range [][]byte{enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k)), enc("PRIVATE KEY", pkcs8)} {
		priv, err := ParsePrivateKeyPEM(data)
		require.NoError(t, err)
		assert.True(t, priv.Equal(k))
	}
	for _, data := range [][]byte{nil, []byte("not pem"), junk, enc("PUBLIC KEY", []byte("bad"))} {
		_, err := ParsePublicKeyPEM(data)
		assert.ErrorIs(t, err, ErrSetup)
	}
	for _, data := range [][]byte{nil, enc("ENCRYPTED PRIVATE KEY", []byte("x")), enc("PRIVATE KEY", []byte("bad"))} {
		_, err := ParsePrivateKeyPEM(data)
		assert.ErrorIs(t, err, ErrSetup)
	}
	_, err = LoadPublicKey(filepath.Join(t.TempDir(), "missing.pem"))
	assert.ErrorIs(t, err, ErrSetup)
	_, err = LoadPrivateKey(filepath.Join(t.TempDir(), "missing.pem"))
	assert.ErrorIs(t, err, ErrSetup)
}
