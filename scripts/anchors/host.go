package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// Host is the summary of the machine an anchor ran on.
type Host struct {
	CPU    string `json:"cpu"`
	Cores  int    `json:"cores"`
	Kernel string `json:"kernel"`
}

// readHost reads the CPU model, the CPUs this process may use and the kernel.
func readHost() *Host {
	h := &Host{CPU: "unknown", Cores: runtime.NumCPU(), Kernel: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	return h
}

// docsOnly reports whether a changed path may differ between the code
// measured and the commit that publishes it.
func docsOnly(path string) bool {
	return strings.HasPrefix(path, "docs/") || path == "README.md"
}

// commitOf returns HEAD, with "+dirty" when the work tree changes code
// (anything outside docs/ and README.md) against it.
func commitOf(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("anchors: git rev-parse: %w", err)
	}
	head := strings.TrimSpace(string(out))
	st, err := exec.CommandContext(ctx, "git", "-C", dir, "status", "--porcelain").Output()
	if err != nil {
		return "", fmt.Errorf("anchors: git status: %w", err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if len(line) > 3 && !docsOnly(strings.TrimSpace(line[3:])) {
			return head + "+dirty", nil
		}
	}
	return head, nil
}

// checkCommits returns an error naming each measured entry whose commit
// differs from HEAD in more than docs/ and README.md (issue 40's check that
// the published figures are of the code published with them).
func checkCommits(ctx context.Context, dir string, f *File) error {
	var bad []string
	for _, e := range f.Anchors {
		if e.Status != statusMeasured {
			continue
		}
		c, dirty := strings.CutSuffix(e.Commit, "+dirty")
		if dirty {
			bad = append(bad, e.Name+": measured on a dirty work tree")
			continue
		}
		out, err := exec.CommandContext(ctx, "git", "-C", dir, "diff", "--name-only", c, "HEAD").Output()
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: git diff %s: %v", e.Name, c, err))
			continue
		}
		for _, p := range strings.Fields(string(out)) {
			if !docsOnly(p) {
				bad = append(bad, fmt.Sprintf("%s: %s changed since %.12s", e.Name, p, c))
				break
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("anchors: figures not of the code at HEAD:\n  %s", strings.Join(bad, "\n  "))
	}
	return nil
}
