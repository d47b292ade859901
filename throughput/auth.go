package throughput

import (
	"crypto/rsa"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfauth"
)

// ClientAuth are the credentials a client presents to a server that
// requires iperf3's RSA authentication (iperf3 --username,
// --rsa-public-key-path and IPERF3_PASSWORD). Run encrypts them with the
// server's public key and sends them as iperf3 3.x does; the password never
// appears in a Result, an error or String's output.
type ClientAuth struct {
	User     string
	Password string
	// PublicKey is the server's RSA public key (ParseRSAPublicKey reads
	// iperf3's PEM files).
	PublicKey *rsa.PublicKey
	// PKCS1Padding uses RSA PKCS#1 v1.5 padding (iperf3's
	// --use-pkcs1-padding) instead of OAEP; both ends must agree.
	PKCS1Padding bool

	now func() time.Time // test seam for the token's clock; nil means time.Now
}

// String names the user and hides the password.
func (a ClientAuth) String() string {
	return fmt.Sprintf("ClientAuth{User: %q, Password: <hidden>}", a.User)
}

// GoString is String, so %#v hides the password too.
func (a ClientAuth) GoString() string { return a.String() }

// ServerAuth makes a server require iperf3's RSA authentication (iperf3
// --rsa-private-key-path, --authorized-users-path, --time-skew-threshold,
// --use-pkcs1-padding). A client whose token is missing, undecryptable,
// outside the time skew threshold or whose user and password are not
// authorized is refused as iperf3 3.21 refuses it, with SERVER_ERROR
// "test authorization failed" (a stock client prints exactly that), and
// the refusal reaches OnFailure with ReasonDenied and ErrAuthFailed.
type ServerAuth struct {
	// PrivateKey decrypts the clients' tokens (ParseRSAPrivateKey reads
	// iperf3's PEM files). Required.
	PrivateKey *rsa.PrivateKey
	// UsersPath is iperf3's authorized-users file: "user,hash" lines, the
	// hash being the lower-case hex SHA-256 of "{user}password". It is read
	// again for every test, as iperf3 reads it, so edits apply at once.
	UsersPath string
	// Users is used when UsersPath is "": user name to the same hash.
	Users map[string]string
	// SkewThreshold is how far a token's clock may be from the server's,
	// either way, in whole seconds; 0 means 10 s, iperf3's default.
	SkewThreshold time.Duration
	// PKCS1Padding expects RSA PKCS#1 v1.5 padding instead of OAEP.
	PKCS1Padding bool
}

// ErrAuthFailed is the server's refusal of the test's credentials (iperf3's
// "test authorization failed"). It matches ErrAccessDenied.
var ErrAuthFailed = fmt.Errorf("%w: test authorization failed", ErrAccessDenied)

// ParseRSAPublicKey reads the first RSA public key of PEM data, in either
// form iperf3 accepts ("PUBLIC KEY" or "RSA PUBLIC KEY").
func ParseRSAPublicKey(pemData []byte) (*rsa.PublicKey, error) {
	k, err := iperfauth.ParsePublicKeyPEM(pemData)
	if err != nil {
		return nil, fmt.Errorf("throughput: %w", err)
	}
	return k, nil
}

// ParseRSAPrivateKey reads the first RSA private key of PEM data (PKCS#1
// or unencrypted PKCS#8).
func ParseRSAPrivateKey(pemData []byte) (*rsa.PrivateKey, error) {
	k, err := iperfauth.ParsePrivateKeyPEM(pemData)
	if err != nil {
		return nil, fmt.Errorf("throughput: %w", err)
	}
	return k, nil
}

func padding(pkcs1 bool) iperfauth.Padding {
	if pkcs1 {
		return iperfauth.PKCS1v15
	}
	return iperfauth.OAEP
}

func (a *ClientAuth) validate() error {
	switch {
	case a == nil:
		return nil
	case a.User == "" || a.PublicKey == nil:
		return errors.New("throughput: ClientAuth needs a user and a public key")
	}
	return nil
}

// token is the authtoken parameter for these credentials at now.
func (a *ClientAuth) token(now time.Time) (string, error) {
	if a.now != nil {
		now = a.now()
	}
	t, err := iperfauth.EncodeToken(a.PublicKey, iperfauth.Credentials{User: a.User, Password: a.Password, Unix: now.Unix()}, padding(a.PKCS1Padding))
	if err != nil {
		return "", fmt.Errorf("throughput: %w", err)
	}
	return t, nil
}

// verifier checks a ServerAuth's settings as iperf3 does at start-up (the
// key is there, the users file can be read) and returns the token checker.
func (a *ServerAuth) verifier() (*iperfauth.Verifier, error) {
	if a == nil {
		return nil, nil
	}
	switch {
	case a.PrivateKey == nil:
		return nil, errors.New("throughput: ServerAuth needs a private key")
	case a.SkewThreshold < 0:
		return nil, errors.New("throughput: negative ServerAuth.SkewThreshold")
	case a.UsersPath == "" && a.Users == nil:
		return nil, errors.New("throughput: ServerAuth needs UsersPath or Users")
	}
	v := &iperfauth.Verifier{Key: a.PrivateKey, UsersPath: a.UsersPath, SkewThreshold: a.SkewThreshold, Padding: padding(a.PKCS1Padding)}
	if a.UsersPath != "" {
		f, err := os.Open(a.UsersPath)
		if err != nil {
			return nil, fmt.Errorf("throughput: authorized users: %w", err)
		}
		_ = f.Close()
	} else {
		v.Users = iperfauth.NewUsers(a.Users)
	}
	return v, nil
}
