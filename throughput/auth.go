package throughput

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfauth"
	"github.com/netperfkit/netperfkit/throughput/iperf3auth"
)

// ErrAuthFailed is the server's refusal of the test's credentials (iperf3's
// "test authorization failed"). It matches ErrAccessDenied.
var ErrAuthFailed = fmt.Errorf("%w: test authorization failed", ErrAccessDenied)

func padding(pkcs1 bool) iperfauth.Padding {
	if pkcs1 {
		return iperfauth.PKCS1v15
	}
	return iperfauth.OAEP
}

// validateAuth checks a client's credentials before anything is sent.
func validateAuth(a *iperf3auth.Client) error {
	switch {
	case a == nil:
		return nil
	case a.User == "" || a.PublicKey == nil:
		return errors.New("throughput: Config.Auth needs a user and a public key")
	}
	return nil
}

// authToken is the authtoken parameter for a's credentials at now.
func authToken(a *iperf3auth.Client, now time.Time) (string, error) {
	t, err := iperfauth.EncodeToken(a.PublicKey, iperfauth.Credentials{User: a.User, Password: a.Password, Unix: now.Unix()}, padding(a.PKCS1Padding))
	if err != nil {
		return "", fmt.Errorf("throughput: %w", err)
	}
	return t, nil
}

// verifier checks a ServerAuth's settings as iperf3 does at start-up (the
// key is there, the users file can be read) and returns the token checker.
func authVerifier(a *iperf3auth.Server) (*iperfauth.Verifier, error) {
	if a == nil {
		return nil, nil
	}
	switch {
	case a.PrivateKey == nil:
		return nil, errors.New("throughput: ServerConfig.Auth needs a private key")
	case a.SkewThreshold < 0:
		return nil, errors.New("throughput: ServerConfig.Auth.SkewThreshold is negative")
	case a.UsersPath == "" && a.Users == nil:
		return nil, errors.New("throughput: ServerConfig.Auth needs UsersPath or Users")
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
