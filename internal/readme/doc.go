// Package readme holds no code: its test keeps the Go snippets of README.md
// and docs/tour.md and the Example functions (or, for the README's quick
// start, the test file) that run them (between "// README begin" and
// "// README end") the same text, so the documents cannot drift from code
// that compiles and runs.
package readme
