package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// skipError says that an anchor's peer is missing: the entry reads
// "skipped: <why>".
type skipError struct{ why string }

func (s *skipError) Error() string { return "skipped: " + s.why }

func skip(format string, args ...any) error { return &skipError{fmt.Sprintf(format, args...)} }

// outcome is what one anchor's comparison returns.
type outcome struct {
	commands  []string
	rounds    []Round
	agreement *Agreement
	load      *Load // set when the run was shared with an earlier anchor
}

// env is one pass's shared state: where the binaries are built, how many
// rounds, and the output of runs that several anchors read.
type env struct {
	root    string // the module's root
	bin     string // built binaries
	rounds  int
	short   bool // 1-second runs: shows the anchor runs, measures nothing
	log     io.Writer
	built   map[string]string
	shared  map[string]*sharedRun
	curLoad *Load
	// agreeOnly is set for an agreement anchor on a busy machine: it
	// checks the agreement and leaves out the timed half, whose figures
	// would not be judged.
	agreeOnly bool
}

// sharedRun is the output of a command that more than one anchor reads.
type sharedRun struct {
	cmd, out string
	load     *Load
	err      error
}

// secs picks the normal or the short duration.
func (e *env) secs(normal, short int) string {
	if e.short {
		return strconv.Itoa(short)
	}
	return strconv.Itoa(normal)
}

// build compiles the package at pkg (relative to the root, or dir/pkg in
// its own module when dir is set) once per pass and returns the binary.
func (e *env) build(ctx context.Context, dir, pkg string) (string, error) {
	key := filepath.Join(dir, pkg)
	if p, ok := e.built[key]; ok {
		return p, nil
	}
	out := filepath.Join(e.bin, filepath.Base(key))
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = filepath.Join(e.root, dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("anchors: go build %s: %w: %s", key, err, b)
	}
	e.built[key] = out
	return out, nil
}

// command is a command line as docs/anchors.json records it: the
// environment first, the repository's paths relative to its root.
func (e *env) command(vars []string, name string, args ...string) string {
	var parts []string
	for _, s := range append(append(slices.Clone(vars), name), args...) {
		s = strings.ReplaceAll(s, e.bin+"/", "$BIN/")
		s = strings.ReplaceAll(s, e.root+"/", "")
		if strings.ContainsAny(s, " |()'*^") || strings.Contains(strings.ReplaceAll(s, "$BIN/", ""), "$") {
			s = "'" + s + "'"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// run runs name with args in the root, vars added to the environment,
// and returns its standard output and the command line. Standard error
// goes to the log, as does standard output.
func (e *env) run(ctx context.Context, vars []string, name string, args ...string) (string, string, error) {
	line := e.command(vars, name, args...)
	fmt.Fprintf(e.log, "anchors: $ %s\n", line)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = e.root
	cmd.Env = append(os.Environ(), vars...)
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(&out, e.log)
	cmd.Stderr = e.log
	cmd.WaitDelay = 0
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("anchors: %s: %w", line, err)
	}
	return out.String(), line, err
}

// runShared runs a command once per pass under key; later anchors that
// ask for the same key get its output and the load it ran at.
func (e *env) runShared(ctx context.Context, key string, vars []string, name string, args ...string) *sharedRun {
	if r, ok := e.shared[key]; ok {
		return r
	}
	out, line, err := e.run(ctx, vars, name, args...)
	r := &sharedRun{cmd: line, out: out, load: e.curLoad, err: err}
	if ctx.Err() == nil {
		e.shared[key] = r
	}
	return r
}

// needBinary returns the path of the first of names on PATH, or a skip.
func needBinary(names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", skip("no %s on PATH (scripts/install-peers.sh installs it)", strings.Join(names, " or "))
}

// iperf321 returns iperf3 3.21's path as scripts/bench/lib.sh finds it.
func iperf321() (string, error) {
	p := os.Getenv("NETPERFKIT_IPERF3")
	if p == "" {
		home, _ := os.UserHomeDir()
		p = filepath.Join(home, ".cache/netperfkit-peers/iperf-3.21/bin/iperf3")
	}
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", skip("no iperf3 3.21 at %s (scripts/install-peers.sh builds it; or set NETPERFKIT_IPERF3)", p)
		}
		return "", fmt.Errorf("anchors: %w", err)
	}
	return p, nil
}
