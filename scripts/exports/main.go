// Command exports counts the exported API of netperfkit's library packages
// and holds it to a budget.
//
// It reads the packages as the compiler sees them (go/types over `go list
// -export` data), so a name is counted where a user reaches it, once:
//
//   - every exported top-level name of a public package (not main, not under
//     internal/, examples/ or scripts/);
//   - every type a user can reach, with its exported fields and declared
//     methods (interface methods too), counted once: in the public package
//     that re-exports it through an alias when one does (a type moved behind
//     `type Result = leaf.Result` still counts where users name it), else in
//     its own package when that is public, else (a type of an internal
//     package, or an unexported type, reached through an exported field,
//     parameter or result) in the first public package that exposes it;
//   - an alias is not a second name: the type behind it is counted once.
//
// Usage: exports [-v] [-check]. With -v it lists every counted identifier, as
// "pkg Name" or "pkg Type.Member". With -check it exits 1 when the core
// packages or the whole library are over budget, naming the packages that
// grew since counts.txt (the counts recorded when the budget last held).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const module = "github.com/netperfkit/netperfkit"

// The budget (issue 44). Raising it needs a line in CHANGELOG.md saying why
// (CHANGELOG.md, "Export budget").
const (
	coreNamesBudget = 780
	coreTypesBudget = 85
	allNamesBudget  = 1100
)

// core are the six primitives the core budget holds.
var core = []string{"cache", "ethtool", "latency", "runinfo", "srd", "throughput"}

func main() {
	verbose := flag.Bool("v", false, "list every counted identifier")
	check := flag.Bool("check", false, "exit 1 when over budget")
	record := flag.Bool("record", false, "write the counts to scripts/exports/counts.txt")
	flag.Parse()
	c, err := count()
	if err != nil {
		fmt.Fprintln(os.Stderr, "exports:", err)
		os.Exit(1)
	}
	if *verbose {
		for _, n := range c.list() {
			fmt.Println(n)
		}
	}
	c.print(os.Stdout)
	if *record {
		if err := c.write("scripts/exports/counts.txt"); err != nil {
			fmt.Fprintln(os.Stderr, "exports:", err)
			os.Exit(1)
		}
	}
	if *check && !c.withinBudget(os.Stderr) {
		os.Exit(1)
	}
}

// listed is the part of `go list -json` this command reads.
type listed struct {
	ImportPath string
	Name       string
	Export     string
	Standard   bool
	DepOnly    bool
}

// goList lists the module's packages and their dependencies with the
// compiler's export data (building what is not in the build cache).
func goList() (pkgs []listed, exports map[string]string, err error) {
	cmd := exec.Command("go", "list", "-e", "-export", "-deps", "-json=ImportPath,Name,Export,Standard,DepOnly", "./...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list: %w", err)
	}
	exports = map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("go list output: %w", err)
		}
		exports[p.ImportPath] = p.Export
		if !p.DepOnly && public(p) {
			pkgs = append(pkgs, p)
		}
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].ImportPath < pkgs[j].ImportPath })
	return pkgs, exports, nil
}

// public reports whether p is a library package a user imports.
func public(p listed) bool {
	if p.Standard || p.Name == "main" || !strings.HasPrefix(p.ImportPath, module) {
		return false
	}
	rel := rel(p.ImportPath)
	for _, seg := range strings.Split(rel, "/") {
		if seg == "internal" || seg == "examples" || seg == "scripts" || seg == "testdata" {
			return false
		}
	}
	return true
}

func rel(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
}

// counts holds the counted identifiers per package (module-relative path).
type counts struct {
	names map[string][]string
	types map[string]int
	seen  map[*types.TypeName]bool
}

func count() (*counts, error) {
	pkgs, exports, err := goList()
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f := exports[path]
		if f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	c := &counts{names: map[string][]string{}, types: map[string]int{}, seen: map[*types.TypeName]bool{}}
	loaded := make([]*types.Package, 0, len(pkgs))
	for _, p := range pkgs {
		tp, err := imp.Import(p.ImportPath)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.ImportPath, err)
		}
		loaded = append(loaded, tp)
	}
	// Aliases first: a type re-exported through an alias counts where the
	// alias is, whatever package declares it.
	for _, tp := range loaded {
		for _, obj := range exported(tp) {
			if tn, ok := obj.(*types.TypeName); ok && tn.IsAlias() {
				c.reach(rel(tp.Path()), types.Unalias(tn.Type()))
			}
		}
	}
	for _, tp := range loaded {
		c.pkg(tp)
	}
	return c, nil
}

func exported(tp *types.Package) []types.Object {
	var out []types.Object
	for _, name := range tp.Scope().Names() {
		if obj := tp.Scope().Lookup(name); obj.Exported() {
			out = append(out, obj)
		}
	}
	return out
}

// pkg counts a public package's own names and what they expose.
func (c *counts) pkg(tp *types.Package) {
	home := rel(tp.Path())
	if _, ok := c.names[home]; !ok {
		c.names[home] = nil
	}
	for _, obj := range exported(tp) {
		switch o := obj.(type) {
		case *types.TypeName:
			if o.IsAlias() {
				continue // counted through the type behind it
			}
			c.reach(home, o.Type())
		default:
			c.add(home, o.Name())
			c.walk(home, o.Type())
		}
	}
}

func (c *counts) add(pkg, name string) { c.names[pkg] = append(c.names[pkg], pkg+" "+name) }

// reach counts the named type behind t (once), attributing it to pkg unless
// its own package is public and no alias claimed it first.
func (c *counts) reach(pkg string, t types.Type) {
	named, ok := types.Unalias(t).(*types.Named)
	if !ok {
		c.walk(pkg, t)
		return
	}
	tn := named.Origin().Obj()
	if tn.Pkg() == nil || !strings.HasPrefix(tn.Pkg().Path(), module) || c.seen[tn] {
		return
	}
	c.seen[tn] = true
	if tn.Exported() {
		c.add(pkg, tn.Name())
		c.types[pkg]++
	}
	typ := tn.Name()
	if !tn.Exported() {
		typ = "(" + typ + ")"
	}
	for i := 0; i < named.NumMethods(); i++ {
		if m := named.Method(i); m.Exported() {
			c.add(pkg, typ+"."+m.Name())
			c.walk(pkg, m.Type())
		}
	}
	switch u := named.Underlying().(type) {
	case *types.Struct:
		for i := 0; i < u.NumFields(); i++ {
			if f := u.Field(i); f.Exported() {
				c.add(pkg, typ+"."+f.Name())
				c.walk(pkg, f.Type())
			}
		}
	case *types.Interface:
		for i := 0; i < u.NumExplicitMethods(); i++ {
			if m := u.ExplicitMethod(i); m.Exported() {
				c.add(pkg, typ+"."+m.Name())
				c.walk(pkg, m.Type())
			}
		}
	default:
		c.walk(pkg, u)
	}
}

// walk follows a type expression to the named types it mentions. A named
// type declared in a public package is left to that package (its own pass
// counts it); one of an internal package, or an unexported one, is counted
// here, where it is exposed.
func (c *counts) walk(pkg string, t types.Type) {
	switch x := t.(type) {
	case *types.Alias:
		c.walk(pkg, types.Unalias(x))
	case *types.Named:
		tn := x.Origin().Obj()
		if tn.Pkg() != nil && strings.HasPrefix(tn.Pkg().Path(), module) &&
			(!tn.Exported() || !public(listed{ImportPath: tn.Pkg().Path(), Name: tn.Pkg().Name()})) {
			c.reach(pkg, x)
		}
		if args := x.TypeArgs(); args != nil {
			for i := 0; i < args.Len(); i++ {
				c.walk(pkg, args.At(i))
			}
		}
	case *types.Pointer:
		c.walk(pkg, x.Elem())
	case *types.Slice:
		c.walk(pkg, x.Elem())
	case *types.Array:
		c.walk(pkg, x.Elem())
	case *types.Map:
		c.walk(pkg, x.Key())
		c.walk(pkg, x.Elem())
	case *types.Chan:
		c.walk(pkg, x.Elem())
	case *types.Signature:
		for _, tup := range []*types.Tuple{x.Params(), x.Results()} {
			for i := 0; i < tup.Len(); i++ {
				c.walk(pkg, tup.At(i).Type())
			}
		}
	case *types.Struct:
		for i := 0; i < x.NumFields(); i++ {
			if f := x.Field(i); f.Exported() || f.Embedded() {
				c.walk(pkg, f.Type())
			}
		}
	}
}

func (c *counts) list() []string {
	var out []string
	for _, ns := range c.names {
		out = append(out, ns...)
	}
	sort.Strings(out)
	return out
}

func (c *counts) packages() []string {
	pkgs := make([]string, 0, len(c.names))
	for p := range c.names {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	return pkgs
}

func isCore(p string) bool {
	for _, c := range core {
		if p == c {
			return true
		}
	}
	return false
}

// totals returns the core six's and every package's names and types.
func (c *counts) totals() (coreNames, coreTypes, allNames, allTypes int) {
	for p, ns := range c.names {
		allNames += len(ns)
		allTypes += c.types[p]
		if isCore(p) {
			coreNames += len(ns)
			coreTypes += c.types[p]
		}
	}
	return
}

func (c *counts) print(w io.Writer) {
	for _, p := range c.packages() {
		fmt.Fprintf(w, "%5d %4d types  %s\n", len(c.names[p]), c.types[p], p)
	}
	cn, ct, an, at := c.totals()
	fmt.Fprintf(w, "%5d %4d types  core (budget %d / %d)\n", cn, ct, coreNamesBudget, coreTypesBudget)
	fmt.Fprintf(w, "%5d %4d types  total (budget %d)\n", an, at, allNamesBudget)
}

func (c *counts) write(path string) error {
	var b strings.Builder
	b.WriteString("# names types package: the counts when the budget last held (go run ./scripts/exports -record)\n")
	for _, p := range c.packages() {
		fmt.Fprintf(&b, "%d %d %s\n", len(c.names[p]), c.types[p], p)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// recorded reads counts.txt: package -> names.
func recorded(path string) map[string]int {
	out := map[string]int{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 || strings.HasPrefix(fs[0], "#") {
			continue
		}
		if n, err := strconv.Atoi(fs[0]); err == nil {
			out[fs[2]] = n
		}
	}
	return out
}

// withinBudget reports whether the counts hold the budget; when not, it
// says which budget broke and which packages grew since counts.txt.
func (c *counts) withinBudget(w io.Writer) bool {
	cn, ct, an, _ := c.totals()
	ok := true
	if cn > coreNamesBudget || ct > coreTypesBudget {
		fmt.Fprintf(w, "exports: the core packages export %d names and %d types (budget %d / %d)\n", cn, ct, coreNamesBudget, coreTypesBudget)
		ok = false
	}
	if an > allNamesBudget {
		fmt.Fprintf(w, "exports: the library exports %d names (budget %d)\n", an, allNamesBudget)
		ok = false
	}
	if ok {
		return true
	}
	before := recorded(filepath.Join("scripts", "exports", "counts.txt"))
	for _, p := range c.packages() {
		if n, was := len(c.names[p]), before[p]; n > was {
			fmt.Fprintf(w, "exports: %s grew: %d names, %d in scripts/exports/counts.txt\n", p, n, was)
		}
	}
	fmt.Fprintln(w, "exports: fold, unexport or merge before adding; raising the budget needs a line in CHANGELOG.md saying why")
	return false
}
