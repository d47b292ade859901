// Package depcheck holds no code: its test runs `go list -deps` on each
// core package and fails when one pulls a module, or one of our own
// packages, outside the allow-list its table states, so that importing a
// primitive stays light. That table is the one statement of the
// dependency rule; docs/architecture.md explains the floors.
package depcheck
