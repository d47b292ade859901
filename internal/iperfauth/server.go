package iperfauth

import (
	"crypto/rsa"
	"fmt"
	"os"
	"time"
)

// DefaultSkewThreshold is iperf3's default --time-skew-threshold.
const DefaultSkewThreshold = 10 * time.Second

// Verifier checks the tokens a server receives, as 3.21's test_is_authorized
// does. Its fields must not change while it is in use; it is then safe for
// concurrent use.
type Verifier struct {
	// Key decrypts tokens (required).
	Key *rsa.PrivateKey
	// UsersPath is the authorized-users file, read again for every check
	// as 3.21 reads it; Users is used instead when UsersPath is "".
	UsersPath string
	Users     *Users
	// SkewThreshold is how far, either way, a token's timestamp may be from
	// the server's clock, in whole seconds; 0 means DefaultSkewThreshold.
	SkewThreshold time.Duration
	// Padding must match the clients' (3.21's --use-pkcs1-padding).
	Padding Padding

	now func() time.Time // test seam; nil means time.Now
}

// Verify decrypts token and checks its timestamp and credentials. It returns
// the user name on success. Errors match ErrNoToken, ErrToken, ErrSkew,
// ErrDenied or ErrSetup (key or users file missing); they name the user but
// never the password.
func (v *Verifier) Verify(token string) (string, error) {
	if v == nil || v.Key == nil {
		return "", fmt.Errorf("%w: verifier has no private key", ErrSetup)
	}
	if token == "" {
		return "", ErrNoToken
	}
	c, err := DecodeToken(v.Key, token, v.Padding)
	if err != nil {
		return "", err
	}
	now := time.Now
	if v.now != nil {
		now = v.now
	}
	skew := v.SkewThreshold
	if skew <= 0 {
		skew = DefaultSkewThreshold
	}
	if !withinSkew(now(), c.Unix, skew) {
		return "", fmt.Errorf("%w: user %q ts %d, threshold %v", ErrSkew, c.User, c.Unix, skew)
	}
	users := v.Users
	if v.UsersPath != "" {
		if users, err = LoadUsers(v.UsersPath); err != nil {
			return "", err
		}
	}
	if !users.Allowed(c.User, c.Password) {
		return "", fmt.Errorf("%w: user %q", ErrDenied, c.User)
	}
	return c.User, nil
}

// LoadUsers reads an authorized-users file (iperf3's --authorized-users-path).
func LoadUsers(path string) (*Users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: authorized users: %w", ErrSetup, err)
	}
	defer f.Close()
	return ParseUsers(f)
}
