package cachetest

// ServerDir exposes the server's temporary directory to the external tests.
func ServerDir(s *Server) string { return s.dir }
