package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
	"github.com/netperfkit/netperfkit/runinfo"
)

// writePublished writes report.md and report.html into dir from rep and
// the SVG plots already drawn there (rep.Plots).
func writePublished(dir string, rep *Report) error {
	svgs := map[string][]byte{}
	plotted := map[string]bool{}
	for _, name := range rep.Plots {
		base, ok := strings.CutSuffix(name, ".svg")
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("reading %s for report.html: %w", name, err)
		}
		svgs[base], plotted[base] = b, true
	}
	doc, err := buildDocument(rep, plotted)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, "report.md"), renderMarkdown(rep, doc)); err != nil {
		return err
	}
	page, err := renderHTML(rep, doc, svgs)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, "report.html"), page)
}

// writeFileAtomic writes b to name through a temporary file, so that a
// reader never sees half a file.
func writeFileAtomic(name string, b []byte) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// metadataRows are the metadata block's lines as field and value, as
// runinfo's text prints them.
func metadataRows(m *runinfo.Metadata) [][2]string {
	if m == nil {
		return nil
	}
	var b bytes.Buffer
	if err := m.WriteText(&b); err != nil {
		return nil
	}
	var rows [][2]string
	for i, line := range strings.Split(b.String(), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		if i == 0 || k == "" {
			continue // the "run metadata" title
		}
		rows = append(rows, [2]string{k, strings.TrimSpace(v)})
	}
	return rows
}

// commandArgs lists the flags set on the command line as -name=value, for
// the reproduce command: a password is replaced by its environment
// variable, which the command then reads.
func commandArgs(fs *flag.FlagSet) []string {
	var out []string
	fs.Visit(func(f *flag.Flag) {
		v := f.Value.String()
		if strings.Contains(f.Name, "pass") {
			out = append(out, "-"+f.Name+"=$"+cachecli.PasswordEnv)
			return
		}
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() && v == "true" {
			out = append(out, "-"+f.Name)
			return
		}
		out = append(out, "-"+f.Name+"="+v)
	})
	return out
}

// shellSafe matches arguments that need no quoting.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:,=@+%^-]+$`)

// shellQuote quotes an argument for a POSIX shell; a password's "$VAR"
// stays expandable.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	if name, env, ok := strings.Cut(s, "=$"); ok && env == cachecli.PasswordEnv {
		return name + `="$` + env + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// reproduceCommands are the commands that repeat the run: the servers the
// remote targets must run, then the report's own command line.
func reproduceCommands(rep *Report) []string {
	var set map[string]string
	version := ""
	if rep.Metadata != nil {
		set, version = rep.Metadata.Settings, rep.Metadata.NetperfkitVersion
	}
	var out []string
	if set["paths"] != "" {
		var hosts []string
		for _, f := range splitList(set["paths"]) {
			if _, h, ok := strings.Cut(f, "="); ok {
				h, _, _ = strings.Cut(h, "@")
				hosts = append(hosts, h)
			}
		}
		out = append(out, "# on every -paths host ("+strings.Join(hosts, ", ")+"): an iperf3 server and a sockperf UDP server",
			"iperf3 -s -p "+orDefault(set["tport"], "5201"), "sockperf server -p "+orDefault(set["lport"], "11111"))
	}
	if m := set["matrix"]; m != "" {
		host, port := m, orDefault(set["tport"], "5201")
		if h, p, err := net.SplitHostPort(m); err == nil {
			host, port = h, p
		}
		out = append(out, "# on the -matrix host ("+host+"): an iperf3 server", "iperf3 -s -p "+port)
	}
	if anyPassword(rep.Command) {
		out = append(out, "# the cache password is read from $"+cachecli.PasswordEnv)
	}
	comment := "# in a clone of netperfkit"
	if version != "" {
		comment += " (this run: " + version + ")"
	}
	cmd := []string{"go", "run", "./examples/report"}
	for _, a := range rep.Command {
		cmd = append(cmd, shellQuote(a))
	}
	return append(out, comment, strings.Join(cmd, " "))
}

func anyPassword(args []string) bool {
	for _, a := range args {
		if strings.Contains(a, "$"+cachecli.PasswordEnv) {
			return true
		}
	}
	return false
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// numericColumns says, per column, whether every filled body cell is a
// number or benchstat's "~ (p=... n=...)" (right-aligned, as the text
// tables) rather than a name.
func numericColumns(t *docTable) []bool {
	out := make([]bool, len(t.header))
	for c := range t.header {
		out[c] = c > 0
		for _, r := range t.rows {
			if c < len(r) && r[c] != "" && r[c] != "-" && !numericCell.MatchString(r[c]) {
				out[c] = false
				break
			}
		}
	}
	return out
}

var numericCell = regexp.MustCompile(`^([+\-]?[0-9.]|~ \()`)
