package iperfauth

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1" //nolint:gosec // OAEP with SHA-1 is what iperf3 (OpenSSL's default) uses.
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Padding selects the RSA encryption padding.
type Padding int

const (
	// OAEP is RSA-OAEP with SHA-1 and an empty label, iperf3's default.
	OAEP Padding = iota
	// PKCS1v15 is RSA PKCS#1 v1.5 padding (iperf3's --use-pkcs1-padding,
	// "at your own risk"): a server that answers differently to bad
	// padding is a Bleichenbacher oracle, so use it only for old peers.
	PKCS1v15
)

func (p Padding) String() string {
	if p == PKCS1v15 {
		return "pkcs1"
	}
	return "oaep"
}

// Errors that EncodeToken, DecodeToken and Server.Authorize return; callers
// test them with errors.Is.
var (
	// ErrToken: the token is not base64, does not decrypt with the key and
	// padding, or its plaintext is not iperf3's credential text.
	ErrToken = errors.New("iperfauth: malformed or undecryptable auth token")
	// ErrNoToken: the client sent no token to a server that requires one.
	ErrNoToken = errors.New("iperfauth: no auth token")
	// ErrSkew: the token's timestamp is further from the server's clock
	// than the threshold.
	ErrSkew = errors.New("iperfauth: timestamp outside the time skew threshold")
	// ErrDenied: the user is not in the authorized-users file or the
	// password does not match.
	ErrDenied = errors.New("iperfauth: user or password not authorized")
	// ErrSetup: a key or the users file is missing or unreadable, or a key
	// is not a usable RSA key.
	ErrSetup = errors.New("iperfauth: key or users file unusable")
)

// Credentials are what a token carries.
type Credentials struct {
	User     string
	Password string
	// Unix is the client's clock when it made the token, in seconds.
	Unix int64
}

// String shows the user and timestamp, never the password.
func (c Credentials) String() string {
	return fmt.Sprintf("user %q ts %d", c.User, c.Unix)
}

// plaintext is iperf3's auth_text_format.
func (c Credentials) plaintext() string {
	return "user: " + c.User + "\npwd:  " + c.Password + "\nts:   " + strconv.FormatInt(c.Unix, 10)
}

// EncodeToken encrypts c for the server holding pub's private key and
// returns the base64 text iperf3 sends as "authtoken". It fails when the
// text does not fit in one RSA block (iperf3 would truncate it).
func EncodeToken(pub *rsa.PublicKey, c Credentials, pad Padding) (string, error) {
	if pub == nil {
		return "", fmt.Errorf("%w: no public key", ErrSetup)
	}
	msg := []byte(c.plaintext())
	var (
		ct  []byte
		err error
	)
	if pad == PKCS1v15 {
		//lint:ignore SA1019 interoperating with iperf3's --use-pkcs1-padding needs it.
		ct, err = rsa.EncryptPKCS1v15(rand.Reader, pub, msg)
	} else {
		ct, err = rsa.EncryptOAEP(sha1.New(), rand.Reader, pub, msg, nil)
	}
	if err != nil {
		// The error of crypto/rsa never contains the message.
		return "", fmt.Errorf("iperfauth: encrypt credentials (%d bytes, %d-bit key): %w", len(msg), pub.N.BitLen(), err)
	}
	return base64.StdEncoding.EncodeToString(ct), nil
}

// DecodeToken decrypts a token with priv and reads the credentials as 3.21
// does. Every failure matches ErrToken.
func DecodeToken(priv *rsa.PrivateKey, token string, pad Padding) (Credentials, error) {
	if priv == nil {
		return Credentials{}, fmt.Errorf("%w: no private key", ErrSetup)
	}
	ct, err := base64.StdEncoding.DecodeString(token)
	if err != nil || len(ct) == 0 {
		return Credentials{}, fmt.Errorf("%w: not base64", ErrToken)
	}
	var msg []byte
	if pad == PKCS1v15 {
		//lint:ignore SA1019 interoperating with iperf3's --use-pkcs1-padding needs it.
		msg, err = rsa.DecryptPKCS1v15(nil, priv, ct)
	} else {
		msg, err = rsa.DecryptOAEP(sha1.New(), nil, priv, ct, nil)
	}
	if err != nil || len(msg) == 0 {
		return Credentials{}, fmt.Errorf("%w: decryption with %s padding failed", ErrToken, pad)
	}
	c, ok := scanCredentials(string(msg))
	if !ok {
		return Credentials{}, fmt.Errorf("%w: not iperf3 credential text", ErrToken)
	}
	return c, nil
}

// scanCredentials reads "user: %s\npwd:  %s\nts:   %ld" with the rules of
// C's sscanf: the text ends at a NUL, white space in the format matches any
// run of white space (also none), %s skips white space and takes a run of
// non-white space, %ld an optionally signed decimal; trailing text is
// ignored.
func scanCredentials(s string) (Credentials, bool) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	var c Credentials
	var ok bool
	if s, ok = scanLiteral(s, "user:"); !ok {
		return c, false
	}
	if c.User, s, ok = scanWord(s); !ok {
		return c, false
	}
	if s, ok = scanLiteral(trimSpace(s), "pwd:"); !ok {
		return c, false
	}
	if c.Password, s, ok = scanWord(s); !ok {
		return c, false
	}
	if s, ok = scanLiteral(trimSpace(s), "ts:"); !ok {
		return c, false
	}
	c.Unix, ok = scanInt(trimSpace(s))
	return c, ok
}

func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r'
}

func trimSpace(s string) string {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return s[i:]
}

func scanLiteral(s, lit string) (string, bool) {
	if !strings.HasPrefix(s, lit) {
		return s, false
	}
	return s[len(lit):], true
}

func scanWord(s string) (word, rest string, ok bool) {
	s = trimSpace(s)
	i := 0
	for i < len(s) && !isSpace(s[i]) {
		i++
	}
	return s[:i], s[i:], i > 0
}

// scanInt reads what strtol would read; out-of-range values clamp as strtol
// clamps them.
func scanInt(s string) (int64, bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == i {
		return 0, false
	}
	v, err := strconv.ParseInt(s[:j], 10, 64)
	if err != nil {
		if s[0] == '-' {
			return -1 << 63, true
		}
		return 1<<63 - 1, true
	}
	return v, true
}

// withinSkew reports whether ts lies within threshold of now, both ways, as
// 3.21's check_authentication (a difference equal to the threshold passes).
func withinSkew(now time.Time, ts int64, threshold time.Duration) bool {
	n, limit := now.Unix(), int64(threshold/time.Second)
	return ts >= n-limit && ts <= n+limit
}
