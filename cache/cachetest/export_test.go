package cachetest

import "crypto/tls"

// ServerDir exposes the server's temporary directory to the external tests.
func ServerDir(s *Server) string { return s.dir }

// ClientTLSConfig exposes the server's client TLS configuration (nil for a
// plaintext server) to the external tests.
func ClientTLSConfig(s *Server) *tls.Config { return s.clientTLSConfig() }
