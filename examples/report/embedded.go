package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
)

// embeddedNote is how every output labels E3 results measured against the
// in-process miniredis: its numbers are Go's, not a cache server's.
const embeddedNote = "in-process miniredis: shows the method, not a cache's performance"

// Labels of the embedded servers' endpoints.
const (
	embeddedLabel    = "miniredis"
	embeddedTLSLabel = "miniredis TLS+ACL"
	embeddedUser     = "bench"
	embeddedPassword = "bench-pw"
)

// cacheTargetSet is what E3 runs against when no -cache is given: the
// targets, a note that must go with their results (empty for real servers),
// and how to stop them.
type cacheTargetSet struct {
	targets []cacheTarget
	note    string
	cleanup func()
	// embedded says the targets are the in-process miniredis.
	embedded bool
	// servers are the local cachetest servers by label (nil: embedded).
	servers map[string]*cachetest.Server
}

// defaultCacheTargets starts the servers E3 measures without -cache: a
// plain and a TLS+ACL cluster of each real valkey-server and redis-server in
// bins, or, when there is none or none starts, two in-process miniredis
// servers. Why the real servers were passed over goes into the note.
func defaultCacheTargets(ctx context.Context, bins []string) (*cacheTargetSet, error) {
	var why string
	if len(bins) > 0 {
		targets, servers, cleanup, err := localCacheTargets(ctx, bins)
		if err == nil {
			return &cacheTargetSet{targets: targets, servers: servers, cleanup: cleanup}, nil
		}
		cleanup()
		why = fmt.Sprintf(" (the installed cache servers did not start: %v)", err)
	}
	targets, cleanup, err := embeddedCacheTargets()
	if err != nil {
		return nil, fmt.Errorf("no cache server is installed and the in-process miniredis did not start: %w", err)
	}
	return &cacheTargetSet{targets: targets, note: embeddedNote + why, cleanup: cleanup, embedded: true}, nil
}

// engines returns the engines that can run against the set's servers:
// all of them against real servers; against miniredis the resp engine
// only, because valkey-glide's connection set-up asks INFO REPLICATION,
// which miniredis does not answer (every glide operation would fail). The
// note says so when glide was asked for.
func (s *cacheTargetSet) engines(in []cache.Engine) []cache.Engine {
	if !s.embedded {
		return in
	}
	var out []cache.Engine
	for _, e := range in {
		if cachecli.Name(e) == cachecli.Resp {
			out = append(out, e)
		}
	}
	if len(out) < len(in) {
		s.note += "; the glide engine does not run against it (its connection set-up asks INFO REPLICATION, which miniredis does not answer)"
	}
	if len(out) == 0 {
		out = []cache.Engine{nil} // resp
	}
	return out
}

// embeddedLabels are the labels embeddedCacheTargets gives its endpoints.
func embeddedLabels() []string { return []string{embeddedLabel, embeddedTLSLabel} }

// embeddedCacheTargets starts two miniredis servers on loopback: a plain
// one, and one that serves TLS only with a throwaway CA and requires an ACL
// user, so that E3's table shows the TCP, TLS and AUTH phases as against a
// real server. The returned cleanup stops them.
func embeddedCacheTargets() ([]cacheTarget, func(), error) {
	plain := miniredis.NewMiniRedis()
	if err := plain.Start(); err != nil {
		return nil, func() {}, fmt.Errorf("starting miniredis: %w", err)
	}
	serverTLS, caPEM, err := throwawayTLS()
	if err != nil {
		plain.Close()
		return nil, func() {}, err
	}
	secure := miniredis.NewMiniRedis()
	secure.RequireUserAuth(embeddedUser, embeddedPassword)
	if err := secure.StartTLS(serverTLS); err != nil {
		plain.Close()
		return nil, func() {}, fmt.Errorf("starting miniredis with TLS: %w", err)
	}
	cleanup := func() {
		plain.Close()
		secure.Close()
	}
	return []cacheTarget{
		{Label: embeddedLabel, Endpoint: &cache.Endpoint{Addr: plain.Addr()}},
		{Label: embeddedTLSLabel, Endpoint: &cache.Endpoint{
			Addr: secure.Addr(), TLS: true, CACertPEM: caPEM,
			User: embeddedUser, Password: cache.Secret(embeddedPassword),
		}},
	}, cleanup, nil
}

// throwawayTLS makes a CA and a server certificate for 127.0.0.1, ::1 and
// localhost signed by it, valid for a day: the server's TLS configuration
// and the CA in PEM for the client to trust.
func throwawayTLS() (*tls.Config, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the miniredis CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "netperfkit report throwaway CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the miniredis CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the miniredis CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the miniredis server key: %w", err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, DNSNames: []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the miniredis server certificate: %w", err)
	}
	cert := tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if caPEM == nil {
		return nil, nil, errors.New("encoding the miniredis CA")
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, caPEM, nil
}
