// Command exports counts the exported identifiers of netperfkit's public
// packages: top-level names, methods, struct fields and interface methods of
// exported types. Examples, internal packages and _test.go files are left out.
// With -v it lists them, one per line, as package.Name or package.Type.Field.
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
	"sort"
	"strings"
)

func main() {
	verbose := flag.Bool("v", false, "list every exported identifier")
	flag.Parse()
	names, types, err := collect(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "exports:", err)
		os.Exit(1)
	}
	sort.Strings(names)
	if *verbose {
		for _, n := range names {
			fmt.Println(n)
		}
	}
	perPkg := map[string]int{}
	typesPerPkg := map[string]int{}
	for _, n := range types {
		pkg, _, _ := strings.Cut(n, " ")
		typesPerPkg[pkg]++
	}
	for _, n := range names {
		pkg, _, _ := strings.Cut(n, " ")
		perPkg[pkg]++
	}
	pkgs := make([]string, 0, len(perPkg))
	for p := range perPkg {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		fmt.Printf("%5d %4d types  %s\n", perPkg[p], typesPerPkg[p], p)
	}
	fmt.Printf("%5d %4d types  total\n", len(names), len(types))
}

func skipDir(path string) bool {
	base := filepath.Base(path)
	if path == "." {
		return false
	}
	return strings.HasPrefix(base, ".") || base == "testdata" || base == "internal" ||
		base == "examples" || base == "scripts" || base == "docs" || base == "deploy"
}

// collect returns every exported identifier and, apart, the exported type names.
func collect(root string) (names, types []string, err error) {
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipDir(path) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		for _, decl := range f.Decls {
			names = append(names, declNames(pkg, decl)...)
			types = append(types, typeNames(pkg, decl)...)
		}
		return nil
	})
	return names, types, err
}

func declNames(pkg string, decl ast.Decl) []string {
	var out []string
	add := func(s string) { out = append(out, pkg+" "+s) }
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return nil
		}
		if d.Recv == nil {
			add(d.Name.Name)
			return out
		}
		recv := recvName(d.Recv.List[0].Type)
		if ast.IsExported(recv) {
			add(recv + "." + d.Name.Name)
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						add(n.Name)
					}
				}
			case *ast.TypeSpec:
				if !s.Name.IsExported() {
					continue
				}
				add(s.Name.Name)
				out = append(out, members(pkg, s.Name.Name, s.Type)...)
			}
		}
	}
	return out
}

func members(pkg, typ string, t ast.Expr) []string {
	var out []string
	var fields *ast.FieldList
	switch x := t.(type) {
	case *ast.StructType:
		fields = x.Fields
	case *ast.InterfaceType:
		fields = x.Methods
	default:
		return nil
	}
	for _, f := range fields.List {
		for _, n := range f.Names {
			if n.IsExported() {
				out = append(out, pkg+" "+typ+"."+n.Name)
			}
		}
	}
	return out
}

func recvName(t ast.Expr) string {
	switch x := t.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

func typeNames(pkg string, decl ast.Decl) []string {
	d, ok := decl.(*ast.GenDecl)
	if !ok {
		return nil
	}
	var out []string
	for _, spec := range d.Specs {
		if s, ok := spec.(*ast.TypeSpec); ok && s.Name.IsExported() {
			out = append(out, pkg+" "+s.Name.Name)
		}
	}
	return out
}
