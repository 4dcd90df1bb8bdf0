package lint

import (
	"fmt"
	"go/ast"
	"go/token"
	"path"
	"strconv"
	"strings"
	"testing"
)

// TestPublicAPI: the public package's API is its own (issue 26). An
// exported alias, exported function or method signature, or field of an
// exported struct type names no internal package's type, so that a user
// reads and builds every value of the API from the public packages.
func TestPublicAPI(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	for _, rel := range nonTestFiles(goFiles(t, root, ".")) {
		if strings.Contains(rel, "/") {
			continue // not the root package
		}
		for _, f := range checkPublicAPI(fset, parseFile(t, fset, root, rel)) {
			t.Error(f)
		}
	}
}

// checkPublicAPI returns the places in file where its exported API names a
// type of an internal package.
func checkPublicAPI(fset *token.FileSet, file *ast.File) []string {
	imports := importNames(file)
	var findings []string
	report := func(what string, n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if p, name := importedName(sel, imports); isInternal(p) {
				findings = append(findings, fmt.Sprintf("%s: %s names %s.%s, an internal type", fset.Position(sel.Pos()), what, path.Base(p), name))
			}
			return false
		})
	}
	for _, decl := range file.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && (d.Recv == nil || exportedRecv(d.Recv)) {
				report("exported "+d.Name.Name, d.Type)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok || !ts.Name.IsExported() {
					continue
				}
				switch {
				case ts.Assign.IsValid():
					report("exported alias "+ts.Name.Name, ts.Type)
				case isStruct(ts.Type):
					for _, field := range ts.Type.(*ast.StructType).Fields.List {
						if len(field.Names) == 0 || field.Names[0].IsExported() {
							report("a field of "+ts.Name.Name, field.Type)
						}
					}
				}
			}
		}
	}
	return findings
}

func isInternal(p string) bool { return strings.HasPrefix(p, module+"/internal/") }

func isStruct(e ast.Expr) bool {
	_, ok := e.(*ast.StructType)
	return ok
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(recv *ast.FieldList) bool {
	t := recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}

func TestPublicAPIRuleCatchesLeaks(t *testing.T) {
	src := `package cosla

import (
	"time"

	"github.com/cosla/cosla/internal/core/wire"
)

type Level = wire.Level

type Result struct {
	Bound wire.Bound
	RTT   time.Duration
	inner wire.Level
}

func Parse(s string) (wire.Level, error) { return 0, nil }

func (r Result) layout() wire.Layout { return wire.Layout{} }
`
	fset, file := parseSource(t, src)
	got := checkPublicAPI(fset, file)
	want := []string{"exported alias Level names wire.Level", "a field of Result names wire.Bound", "exported Parse names wire.Level"}
	if len(got) != len(want) {
		t.Fatalf("findings %q, want %d: %q", got, len(want), want)
	}
	for _, w := range want {
		if !containsFinding(got, w) {
			t.Errorf("no finding %q in %q", w, got)
		}
	}
}

// TestExamplesPublic: the godoc examples import public packages only, so
// that a user can copy them (issue 26).
func TestExamplesPublic(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	examples := 0
	for _, rel := range goFiles(t, root, ".") {
		if !strings.HasSuffix(rel, "example_test.go") || strings.HasPrefix(rel, "internal/") {
			continue
		}
		examples++
		for _, imp := range parseFile(t, fset, root, rel).Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); isInternal(p) {
				t.Errorf("%s: imports %s: an example a user copies may import public packages only", rel, p)
			}
		}
	}
	if examples == 0 {
		t.Error("no example_test.go outside internal/: update TestExamplesPublic")
	}
}
