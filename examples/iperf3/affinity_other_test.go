//go:build !linux

package main

import "testing"

// restoreAffinity has nothing to restore where -A is not available.
func restoreAffinity(*testing.T) func() { return func() {} }
