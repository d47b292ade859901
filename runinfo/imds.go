package runinfo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// The instance metadata service's IMDSv2 exchange: a PUT for a session
// token, then a GET with it. These are the names the AWS SDKs use.
const (
	defaultIMDSEndpoint = "http://169.254.169.254"
	// envIMDSDisabled, when "true" (any case), keeps the service unasked.
	envIMDSDisabled = "AWS_EC2_METADATA_DISABLED"
	// envIMDSEndpoint replaces the default endpoint when Config.IMDSEndpoint
	// is "".
	envIMDSEndpoint = "AWS_EC2_METADATA_SERVICE_ENDPOINT"
	tokenPath       = "/latest/api/token"
	identityPath    = "/latest/dynamic/instance-identity/document"
	tokenTTLHeader  = "X-aws-ec2-metadata-token-ttl-seconds"
	tokenHeader     = "X-aws-ec2-metadata-token"
	// tokenTTL is the token's life in seconds: one Collect needs it once.
	tokenTTL = "60"
	// imdsDialTimeout gives up on a host where nothing answers at the
	// link-local address (off EC2 the SYN goes nowhere), as the SDK does.
	imdsDialTimeout = 250 * time.Millisecond
	// maxToken and maxIdentity bound what is read of each answer: a token
	// is about 56 bytes and an identity document about 500.
	maxToken    = 4 << 10
	maxIdentity = 64 << 10
	// noIMDSv2Answer starts the note of a transport failure; WriteText
	// prints the note without the detail that follows it.
	noIMDSv2Answer = "no IMDSv2 answer"
)

// imdsDisabled reports whether the environment turns the service off, as
// the AWS SDKs read it.
func imdsDisabled() bool { return strings.EqualFold(os.Getenv(envIMDSDisabled), "true") }

// imdsEndpoint is the base URL to ask: Config.IMDSEndpoint, else the
// environment's, else the link-local default.
func imdsEndpoint(c Config) string {
	for _, e := range []string{c.IMDSEndpoint, os.Getenv(envIMDSEndpoint)} {
		if e != "" {
			return strings.TrimSuffix(e, "/")
		}
	}
	return defaultIMDSEndpoint
}

// readEC2 asks IMDSv2 (a session token, then the instance identity
// document) within the timeout, once: no retry and no fallback to IMDSv1.
func readEC2(parent context.Context, c Config) (*EC2, error) {
	timeout := c.IMDSTimeout
	if timeout == 0 {
		timeout = defaultIMDSTimeout
	}
	if err := parent.Err(); err != nil {
		return nil, fmt.Errorf("the instance metadata service was not asked: %w", err)
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	tr := &http.Transport{
		Proxy:             nil, // the service is on the host's own link
		DialContext:       (&net.Dialer{Timeout: imdsDialTimeout}).DialContext,
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	base := imdsEndpoint(c)
	token, err := imdsCall(ctx, client, http.MethodPut, base+tokenPath, tokenTTLHeader, tokenTTL, maxToken)
	if err == nil {
		var doc []byte
		doc, err = imdsCall(ctx, client, http.MethodGet, base+identityPath, tokenHeader, string(token), maxIdentity)
		if err == nil {
			return parseIdentityDocument(doc)
		}
	}
	var status *statusError
	switch {
	case parent.Err() != nil:
		// The caller gave up, not the service: the timeout did not run out.
		return nil, fmt.Errorf("the instance metadata request was cut short: %w", parent.Err())
	case ctx.Err() != nil:
		return nil, fmt.Errorf("no instance metadata service answered within %s", timeout)
	case errors.As(err, &status), errors.Is(err, errTooLarge):
		return nil, fmt.Errorf("the instance metadata service answered, but %w", err)
	}
	return nil, fmt.Errorf("%s: %w", noIMDSv2Answer, err)
}

// statusError is an answer other than 200 OK.
type statusError struct {
	method, path, status string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s returned %s", e.method, e.path, e.status)
}

// errTooLarge is an answer longer than its limit.
var errTooLarge = errors.New("the answer is longer than expected")

// imdsCall makes one request with one header and returns the body of a 200
// answer, at most limit bytes of it.
func imdsCall(ctx context.Context, client *http.Client, method, url, header, value string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(header, value)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	path := req.URL.Path
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{method: method, path: path, status: resp.Status}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%s %s: %w (%d bytes at most)", method, path, errTooLarge, limit)
	}
	return body, nil
}

// identityDocument is the part of the instance identity document read.
type identityDocument struct {
	InstanceType     string `json:"instanceType"`
	AvailabilityZone string `json:"availabilityZone"`
	InstanceID       string `json:"instanceId"`
	Region           string `json:"region"`
}

// parseIdentityDocument reads the instance identity document: one JSON
// object, nothing after it, with the four fields Collect reports set.
func parseIdentityDocument(data []byte) (*EC2, error) {
	var d identityDocument
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("the instance metadata service answered, but the identity document is not JSON: %w", err)
	}
	for _, f := range []struct{ name, v string }{
		{"instanceType", d.InstanceType}, {"availabilityZone", d.AvailabilityZone}, {"instanceId", d.InstanceID}, {"region", d.Region},
	} {
		if f.v == "" {
			return nil, fmt.Errorf("the instance metadata service answered, but the identity document has no %s", f.name)
		}
	}
	return &EC2{InstanceType: d.InstanceType, AvailabilityZone: d.AvailabilityZone, InstanceID: d.InstanceID, Region: d.Region}, nil
}
