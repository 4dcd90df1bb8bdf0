package lint

import (
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// module is the module path the layer rules name packages under.
const module = "github.com/cosla/cosla"

// layerRules are the imports the tree's layers forbid (DESIGN.md section
// 9), checked on non-test files: a folder's code may not import a package
// at or below any of its forbidden paths ("" is the public root package
// alone). The cores know nothing of what hosts or measures them; the
// runtimes know nothing of the lab or the public package; the binary
// knows no core.
var layerRules = []struct {
	folder    string
	forbidden []string
}{
	{"internal/core", []string{"", "internal/runtime", "internal/lab", "cmd"}},
	{"internal/runtime", []string{"", "internal/lab", "cmd"}},
	{"internal/lab", []string{"cmd"}},
	// The binary is flags, wiring and printing over the public API (and
	// the runtimes and the lab it starts): no protocol core.
	{"cmd", []string{"internal/core"}},
}

func TestLayers(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	for _, rule := range layerRules {
		files := nonTestFiles(goFiles(t, root, rule.folder))
		if len(files) == 0 {
			t.Errorf("layer %s has no Go files: update layerRules", rule.folder)
		}
		for _, rel := range files {
			for _, imp := range parseFile(t, fset, root, rel).Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if bad, ok := crosses(path, rule.forbidden); ok {
					t.Errorf("%s: imports %s, but %s may not import %s (DESIGN.md section 9)", rel, path, rule.folder, bad)
				}
			}
		}
	}
}

// crosses reports whether path is at or below one of forbidden, module
// relative, and which.
func crosses(path string, forbidden []string) (string, bool) {
	for _, f := range forbidden {
		if f == "" {
			if path == module {
				return "the public package " + module, true
			}
			continue
		}
		full := module + "/" + f
		if path == full || strings.HasPrefix(path, full+"/") {
			return f, true
		}
	}
	return "", false
}

func TestCrosses(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{module, true},
		{module + "/internal/runtime/sim", true},
		{module + "/internal/runtime", true},
		{module + "/internal/runtimes", false},
		{module + "/internal/core/wire", false},
		{module + "/sla", false},
		{"fmt", false},
	} {
		if _, got := crosses(tc.path, []string{"", "internal/runtime"}); got != tc.want {
			t.Errorf("crosses(%s) = %v, want %v", tc.path, got, tc.want)
		}
	}
}
