package iam

import "time"

// SetClock makes s sign at the times now returns.
func SetClock(s *TokenSource, now func() time.Time) { s.now = now }
