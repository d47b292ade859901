// Command funclen lists the functions outside tests that are longer than the
// limit (80 lines by default, counted from the func line to its closing brace)
// and exits 1 when it finds one. Usage: go run ./scripts/funclen [-max N] [dir]
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	limit := flag.Int("max", 80, "longest function allowed, in lines")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	n, err := check(root, *limit)
	if err != nil {
		fmt.Fprintln(os.Stderr, "funclen:", err)
		os.Exit(2)
	}
	if n > 0 {
		fmt.Fprintf(os.Stderr, "funclen: %d functions longer than %d lines\n", n, *limit)
		os.Exit(1)
	}
}

func check(root string, limit int) (int, error) {
	over := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines > limit {
				over++
				fmt.Printf("%s:%d: %s is %d lines\n", path, fset.Position(fn.Pos()).Line, fn.Name.Name, lines)
			}
		}
		return nil
	})
	return over, err
}
