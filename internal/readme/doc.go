// Package readme holds no code: its test keeps README.md's Go snippets and
// the Example functions that run them (between "// README begin" and
// "// README end") the same text, so the README cannot drift from code that
// compiles and runs.
package readme
