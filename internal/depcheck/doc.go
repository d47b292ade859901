// Package depcheck holds no code: its test runs `go list -deps` on each
// core package and fails when one pulls a module, or one of our own
// packages, outside the allow-list its doc.go states, so that importing a
// primitive stays light.
package depcheck
