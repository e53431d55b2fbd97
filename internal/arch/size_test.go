package arch_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bounds of a function outside tests: past them, a function holds more
// than one reader can keep in mind. The count of complexity is gocyclo's:
// one, plus one per if, for, range, case and communication clause (not
// default), && and ||.
const (
	maxComplexity = 25
	maxLines      = 80
)

// TestFunctionSize: no function outside tests is longer than maxLines or
// more complex than maxComplexity, unless testdata/exceptions.txt names it
// with why; an exception that no longer needs to be one fails too, so the
// list only shrinks.
func TestFunctionSize(t *testing.T) {
	exceptions := readExceptions(t)
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join("..", "..", top), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(filepath.Join("..", ".."), path)
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				name := funcName(fn)
				key := filepath.ToSlash(rel) + " " + name
				c := complexity(fn)
				lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
				if c <= maxComplexity && lines <= maxLines {
					continue
				}
				seen[key] = true
				if _, ok := exceptions[key]; !ok {
					t.Errorf("%s: %s has complexity %d and %d lines (bounds %d and %d): split it, or name it in testdata/exceptions.txt with why",
						rel, name, c, lines, maxComplexity, maxLines)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for key := range exceptions {
		if !seen[key] {
			t.Errorf("testdata/exceptions.txt names %s, which is within the bounds now (or gone): remove it", key)
		}
	}
}

// readExceptions reads "path func: why" lines; # starts a comment.
func readExceptions(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "exceptions.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, why, ok := strings.Cut(line, ": ")
		if !ok || strings.TrimSpace(why) == "" || len(strings.Fields(key)) != 2 {
			t.Fatalf("testdata/exceptions.txt:%d: want \"path func: why\"", n)
		}
		out[key] = why
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	var recv string
	switch r := fn.Recv.List[0].Type.(type) {
	case *ast.StarExpr:
		recv = "*" + typeName(r.X)
	default:
		recv = typeName(r)
	}
	return fmt.Sprintf("(%s).%s", recv, fn.Name.Name)
}

func typeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr:
		return typeName(x.X)
	case *ast.IndexListExpr:
		return typeName(x.X)
	}
	return "?"
}

// complexity is gocyclo's count for one function, closures included.
func complexity(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if x.List != nil {
				c++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}
