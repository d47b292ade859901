package runinfo

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/enaapicheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// identityJSON is an instance identity document as EC2 serves it.
const identityJSON = `{
  "accountId" : "123456789012",
  "architecture" : "x86_64",
  "availabilityZone" : "eu-west-1b",
  "imageId" : "ami-0abcdef1234567890",
  "instanceId" : "i-0123456789abcdef0",
  "instanceType" : "c6in.8xlarge",
  "pendingTime" : "2026-11-30T10:00:00Z",
  "privateIp" : "10.0.1.20",
  "region" : "eu-west-1",
  "version" : "2017-09-30"
}`

var identityEC2 = EC2{InstanceType: "c6in.8xlarge", AvailabilityZone: "eu-west-1b", InstanceID: "i-0123456789abcdef0", Region: "eu-west-1"}

// fakeIMDS is an IMDSv2-only service: a PUT with a TTL gives token, and a GET
// of the identity document needs it. Its fields change what it answers.
type fakeIMDS struct {
	token    string // the token the PUT hands out
	want     string // the token a GET must carry; "" means token
	document string // the identity document; "" means identityJSON
	status   int    // when set, the GET's status instead of 200
	putCode  int    // when set, the PUT's status instead of 200

	mu       sync.Mutex
	requests []string // "METHOD path header-value"
}

func (f *fakeIMDS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodPut && r.URL.Path == tokenPath:
		f.requests = append(f.requests, "PUT "+r.URL.Path+" ttl="+r.Header.Get(tokenTTLHeader))
		if r.Header.Get(tokenTTLHeader) == "" {
			http.Error(w, "missing TTL", http.StatusBadRequest)
			return
		}
		if f.putCode != 0 {
			w.WriteHeader(f.putCode)
			return
		}
		_, _ = w.Write([]byte(f.token))
	case r.Method == http.MethodGet && r.URL.Path == identityPath:
		got := r.Header.Get(tokenHeader)
		f.requests = append(f.requests, "GET "+r.URL.Path+" token="+got)
		want := f.want
		if want == "" {
			want = f.token
		}
		if got != want {
			http.Error(w, "", http.StatusUnauthorized)
			return
		}
		if f.status != 0 {
			if f.status/100 == 3 {
				w.Header().Set("Location", identityPath)
			}
			w.WriteHeader(f.status)
			return
		}
		doc := f.document
		if doc == "" {
			doc = identityJSON
		}
		_, _ = w.Write([]byte(doc))
	default:
		f.requests = append(f.requests, r.Method+" "+r.URL.Path)
		http.NotFound(w, r)
	}
}

func (f *fakeIMDS) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// serve starts f on loopback and returns its base URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// collectFrom runs collect under a liveness bound, with no DMI evidence, so
// the note starts with ec2Unknown. Unless cfg sets one, the IMDS timeout is
// 30 s, so that a loaded machine's slowness never decides a verdict: only a
// test of the timeout itself sets a short one.
func collectFrom(t *testing.T, cfg *Config) *Metadata {
	t.Helper()
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.IMDSTimeout == 0 {
		c.IMDSTimeout = 30 * time.Second
	}
	cfg = &c
	var m *Metadata
	done := make(chan struct{})
	go func() {
		defer close(done)
		m = collect(context.Background(), cfg, dmiRoot("none"))
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("collect did not return within a minute")
	}
	require.NotNil(t, m)
	return m
}

func TestIMDSv2TokenThenDocument(t *testing.T) {
	f := &fakeIMDS{token: "AQAEAtoken=="}
	m := collectFrom(t, &Config{IMDSEndpoint: serve(t, f) + "/"})
	require.NotNil(t, m.EC2, m.EC2Note)
	assert.Equal(t, identityEC2, *m.EC2)
	assert.Empty(t, m.EC2Note)
	assert.Equal(t, []string{
		"PUT " + tokenPath + " ttl=" + tokenTTL,
		"GET " + identityPath + " token=AQAEAtoken==",
	}, f.seen(), "one token PUT, then one GET carrying the token; nothing else")
}

// TestIMDSv2Refusals: every way the service can answer without a document
// leaves EC2 nil, says what happened, and never falls back to IMDSv1.
func TestIMDSv2Refusals(t *testing.T) {
	for _, c := range []struct {
		name string
		f    *fakeIMDS
		note string
		reqs int
	}{
		{"token PUT refused (IMDSv1 only)", &fakeIMDS{token: "t", putCode: http.StatusForbidden},
			"the instance metadata service answered, but PUT " + tokenPath + " returned 403 Forbidden", 1},
		{"wrong token", &fakeIMDS{token: "t", want: "other"},
			"the instance metadata service answered, but GET " + identityPath + " returned 401 Unauthorized", 2},
		{"404", &fakeIMDS{token: "t", status: http.StatusNotFound},
			"returned 404 Not Found", 2},
		{"redirect not followed", &fakeIMDS{token: "t", status: http.StatusFound},
			"returned 302 Found", 2},
		{"oversized token", &fakeIMDS{token: strings.Repeat("t", maxToken+1)},
			"PUT " + tokenPath + ": the answer is longer than expected (4096 bytes at most)", 1},
		{"oversized document", &fakeIMDS{token: "t", document: `{"instanceId":"` + strings.Repeat("i", maxIdentity) + `"}`},
			"GET " + identityPath + ": the answer is longer than expected (65536 bytes at most)", 2},
		{"truncated JSON", &fakeIMDS{token: "t", document: `{"instanceType":"c6in`},
			"the identity document is not JSON", 2},
		{"trailing data", &fakeIMDS{token: "t", document: identityJSON + `{}`},
			"the identity document is not JSON", 2},
		{"empty object", &fakeIMDS{token: "t", document: `{}`},
			"the identity document has no instanceType", 2},
		{"no region", &fakeIMDS{token: "t", document: `{"instanceType":"m5.large","availabilityZone":"a","instanceId":"i-1"}`},
			"the identity document has no region", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := collectFrom(t, &Config{IMDSEndpoint: serve(t, c.f)})
			assert.Nil(t, m.EC2)
			assert.True(t, strings.HasPrefix(m.EC2Note, ec2Unknown+" ("), m.EC2Note)
			assert.Contains(t, m.EC2Note, c.note)
			assert.Len(t, c.f.seen(), c.reqs, "no retry, no IMDSv1 GET: %v", c.f.seen())
			var b strings.Builder
			require.NoError(t, m.WriteText(&b))
			assert.Contains(t, b.String(), c.note, "an answer that was refused is printed whole")
		})
	}
}

// TestIMDSv2SlowService: a service that accepts and never answers is given
// up at the timeout, in either request.
func TestIMDSv2SlowService(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	stall := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	slowPut := http.HandlerFunc(stall)
	slowGet := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			_, _ = w.Write([]byte("t"))
			return
		}
		stall(w, r)
	})
	slowBody := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			_, _ = w.Write([]byte("t"))
			return
		}
		_, _ = w.Write([]byte(`{"instanceType":`))
		w.(http.Flusher).Flush()
		stall(w, r)
	})
	for name, h := range map[string]http.Handler{"token": slowPut, "document": slowGet, "document body": slowBody} {
		t.Run(name, func(t *testing.T) {
			m := collectFrom(t, &Config{IMDSEndpoint: serve(t, h), IMDSTimeout: 100 * time.Millisecond})
			assert.Nil(t, m.EC2)
			assert.Contains(t, m.EC2Note, "no instance metadata service answered within 100ms")
		})
	}
}

// TestIMDSEnvironment: AWS_EC2_METADATA_DISABLED=true asks nothing and says
// so; AWS_EC2_METADATA_SERVICE_ENDPOINT is the endpoint when Config names
// none.
func TestIMDSEnvironment(t *testing.T) {
	f := &fakeIMDS{token: "t"}
	base := serve(t, f)
	for _, v := range []string{"true", "TRUE", "True"} {
		t.Setenv(envIMDSDisabled, v)
		m := collectFrom(t, &Config{IMDSEndpoint: base})
		assert.Nil(t, m.EC2)
		assert.Contains(t, m.EC2Note, "the instance metadata service was not asked: AWS_EC2_METADATA_DISABLED is true")
		assert.Empty(t, f.seen(), "no request at all")
	}
	t.Setenv(envIMDSDisabled, "false")
	t.Setenv(envIMDSEndpoint, base)
	m := collectFrom(t, nil)
	require.NotNil(t, m.EC2, m.EC2Note)
	assert.Equal(t, identityEC2, *m.EC2)
	assert.Len(t, f.seen(), 2)

	// Config's endpoint comes first: this one refuses the connection.
	other := httptest.NewServer(http.NotFoundHandler())
	other.Close()
	m = collectFrom(t, &Config{IMDSEndpoint: other.URL})
	assert.Nil(t, m.EC2)
	assert.Contains(t, m.EC2Note, noIMDSv2Answer+": ")
	assert.Len(t, f.seen(), 2, "the environment's endpoint was not asked")
}

func TestIMDSEndpointDefault(t *testing.T) {
	t.Setenv(envIMDSEndpoint, "")
	assert.Equal(t, "http://169.254.169.254", imdsEndpoint(Config{}))
	t.Setenv(envIMDSEndpoint, "http://[fd00:ec2::254]/")
	assert.Equal(t, "http://[fd00:ec2::254]", imdsEndpoint(Config{}))
	assert.Equal(t, "http://127.0.0.1:9", imdsEndpoint(Config{IMDSEndpoint: "http://127.0.0.1:9"}))
}

func TestIMDSBadEndpoint(t *testing.T) {
	enaapicheck.Call(t, "collect(bad URL)", func() {
		m := collect(context.Background(), &Config{IMDSEndpoint: "http://[::1"}, dmiRoot("none"))
		assert.Nil(t, m.EC2)
		assert.Contains(t, m.EC2Note, noIMDSv2Answer)
	})
}

// FuzzParseIdentityDocument feeds the identity document parser arbitrary
// input: it never panics, what it accepts has the four fields, and they
// read back the same from the document's own JSON.
func FuzzParseIdentityDocument(f *testing.F) {
	f.Add([]byte(identityJSON))
	f.Add([]byte(`{"instanceType":"m4.xlarge","availabilityZone":"us-east-1f","instanceId":"i-1234567890abcdef0","region":"us-east-1"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"instanceType":`))
	f.Add([]byte(identityJSON + ` {}`))
	f.Add([]byte(`{"instanceType":"a","availabilityZone":"b","instanceId":"c","region":"d","region":"\u0000"}`))
	f.Add([]byte(`{"instanceType":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := parseIdentityDocument(data)
		if err != nil {
			require.Nil(t, e)
			require.True(t, strings.HasPrefix(err.Error(), "the instance metadata service answered, but the identity document "), err.Error())
			return
		}
		require.NotNil(t, e)
		for _, v := range []string{e.InstanceType, e.AvailabilityZone, e.InstanceID, e.Region} {
			require.NotEmpty(t, v)
		}
		b, err := json.Marshal(identityDocument{InstanceType: e.InstanceType, AvailabilityZone: e.AvailabilityZone, InstanceID: e.InstanceID, Region: e.Region})
		require.NoError(t, err)
		back, err := parseIdentityDocument(b)
		require.NoError(t, err)
		require.Equal(t, e, back)
	})
}
