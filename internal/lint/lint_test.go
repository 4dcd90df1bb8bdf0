package lint

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// purePackages are the folders of STYLE.md habit 1, relative to the
// module root: every package under internal/core (the protocol cores,
// DESIGN.md section 9) and the simulator that runs them. The rule follows
// the folder: a package placed under internal/core is checked without
// being listed. A package with no non-test Go files yet is skipped.
var purePackages = []string{
	"internal/core",
	"internal/runtime/sim",
}

// encodingPackages sit under a pure package but are not protocol code: the
// protobuf encoding of wire's messages links the protobuf and DRPC
// runtimes, and only the server and client runtimes import it.
var encodingPackages = []string{
	"internal/core/wire/wirepb",
}

// pureFiles returns the non-test Go files of a pure package and its
// subpackages, less the encoding packages.
func pureFiles(t *testing.T, root, pkg string) []string {
	var files []string
	for _, rel := range nonTestFiles(goFiles(t, root, pkg)) {
		if !slices.ContainsFunc(encodingPackages, func(p string) bool { return strings.HasPrefix(rel, p+"/") }) {
			files = append(files, rel)
		}
	}
	return files
}

// forbiddenTimeFuncs read the wall clock, sleep or start timers. Pure code is
// told the time by its environment instead.
var forbiddenTimeFuncs = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "Tick": true, "NewTimer": true, "NewTicker": true,
}

// allowedRandNames are the only names of math/rand and math/rand/v2 a pure
// package may use: constructors and the types they return. Every other
// package-level function draws from the global source.
var allowedRandNames = map[string]bool{
	"New": true, "NewSource": true, "NewPCG": true, "NewChaCha8": true, "NewZipf": true,
	"Rand": true, "Source": true, "Source64": true, "PCG": true, "ChaCha8": true, "Zipf": true,
}

// forbiddenImports may not be imported by a pure package, nor may any package
// below them (net/http, os/exec, sync/atomic, pebble/vfs, ...).
var forbiddenImports = []string{
	"net", "os", "syscall", "io/ioutil", "unsafe", "crypto/rand",
	"context", "sync",
	"google.golang.org/grpc", "github.com/cockroachdb/pebble",
}

// globalLoggerFuncs are the package-level functions of "log" and "log/slog"
// that write through (or replace) the process-wide logger (STYLE.md habit 9).
var globalLoggerFuncs = map[string]map[string]bool{
	"log": {
		"Print": true, "Printf": true, "Println": true,
		"Fatal": true, "Fatalf": true, "Fatalln": true,
		"Panic": true, "Panicf": true, "Panicln": true,
	},
	"log/slog": {
		"Debug": true, "Info": true, "Warn": true, "Error": true, "Log": true, "LogAttrs": true,
		"DebugContext": true, "InfoContext": true, "WarnContext": true, "ErrorContext": true,
		"SetDefault": true,
	},
}

func TestPurity(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	checked := 0
	for _, pkg := range purePackages {
		files := pureFiles(t, root, pkg)
		if len(files) == 0 {
			t.Logf("skipping %s: no Go files yet", pkg)
			continue
		}
		checked++
		for _, rel := range files {
			for _, f := range checkPurity(fset, parseFile(t, fset, root, rel), pkg) {
				t.Error(f)
			}
		}
	}
	if checked == 0 {
		t.Fatalf("none of the pure packages %v exist under %s; update purePackages", purePackages, root)
	}
}

func TestNoGlobalLoggers(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	for _, rel := range nonTestFiles(goFiles(t, root, ".")) {
		if strings.HasPrefix(rel, "cmd/") {
			continue // commands own the process and may set up logging
		}
		for _, f := range checkGlobalLoggers(fset, parseFile(t, fset, root, rel)) {
			t.Error(f)
		}
	}
}

func TestGofmt(t *testing.T) {
	root := moduleRoot(t)
	for _, rel := range goFiles(t, root, ".") {
		src, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		formatted, err := format.Source(src)
		switch {
		case err != nil:
			t.Errorf("%s: cannot gofmt: %v", rel, err)
		case !bytes.Equal(src, formatted):
			t.Errorf("%s is not gofmt-clean; run gofmt -w %s", rel, rel)
		}
	}
}

// checkPurity returns one finding per construct in file that a pure package
// (STYLE.md habit 1) must not use.
func checkPurity(fset *token.FileSet, file *ast.File, pkg string) []string {
	var findings []string
	report := func(pos token.Pos, what string) {
		p := fset.Position(pos)
		findings = append(findings, fmt.Sprintf("%s:%d: %s is not allowed in pure package %s (STYLE.md habit 1)",
			p.Filename, p.Line, what, pkg))
	}
	for _, spec := range file.Imports {
		path, _ := strconv.Unquote(spec.Path.Value)
		switch {
		case isForbiddenImport(path):
			report(spec.Pos(), fmt.Sprintf("import %q", path))
		case spec.Name != nil && spec.Name.Name == "." && (path == "time" || isRand(path)):
			// A dot import would hide time.Now and rand.Intn from the checks below.
			report(spec.Pos(), fmt.Sprintf("dot import of %q", path))
		}
	}
	imports := importNames(file)
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n.Pos(), "go statement")
		case *ast.SelectStmt:
			report(n.Pos(), "select statement")
		case *ast.SendStmt:
			report(n.Pos(), "channel send")
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				report(n.Pos(), "channel receive")
			}
		case *ast.ChanType: // also catches make(chan T)
			report(n.Pos(), "channel type")
		case *ast.SelectorExpr:
			path, name := importedName(n, imports)
			switch {
			case path == "time" && forbiddenTimeFuncs[name]:
				report(n.Pos(), "time."+name)
			case isRand(path) && !allowedRandNames[name]:
				report(n.Pos(), fmt.Sprintf("global %q function rand.%s", path, name))
			}
		}
		return true
	})
	return findings
}

// checkGlobalLoggers returns one finding per call (or reference) in file to a
// function that uses the process-wide logger (STYLE.md habit 9).
func checkGlobalLoggers(fset *token.FileSet, file *ast.File) []string {
	var findings []string
	imports := importNames(file)
	ast.Inspect(file, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if path, name := importedName(sel, imports); globalLoggerFuncs[path][name] {
				p := fset.Position(sel.Pos())
				findings = append(findings, fmt.Sprintf("%s:%d: %s.%s uses the global logger; inject a *slog.Logger (STYLE.md habit 9)",
					p.Filename, p.Line, path, name))
			}
		}
		return true
	})
	return findings
}

func isRand(path string) bool { return path == "math/rand" || path == "math/rand/v2" }

func isForbiddenImport(path string) bool {
	for _, p := range forbiddenImports {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// importNames maps the name each import is known by in file to its path.
// Blank and dot imports bind no name and are left out.
func importNames(file *ast.File) map[string]string {
	names := make(map[string]string)
	for _, spec := range file.Imports {
		path, _ := strconv.Unquote(spec.Path.Value)
		name := defaultImportName(path)
		if spec.Name != nil {
			name = spec.Name.Name
		}
		if name != "_" && name != "." {
			names[name] = path
		}
	}
	return names
}

var majorVersion = regexp.MustCompile(`^v[0-9]+$`)

// defaultImportName guesses a package's name from its import path: the last
// element, skipping a major-version suffix ("math/rand/v2" is rand). That is
// right for every package the rules look for.
func defaultImportName(path string) string {
	elems := strings.Split(path, "/")
	last := elems[len(elems)-1]
	if len(elems) > 1 && majorVersion.MatchString(last) {
		last = elems[len(elems)-2]
	}
	return last
}

// importedName resolves pkg.Name to the import path of pkg and Name. It
// returns an empty path when sel is not a qualified identifier, including when
// a declaration in the file shadows the import (rand := rand.New(...)).
func importedName(sel *ast.SelectorExpr, imports map[string]string) (path, name string) {
	id, ok := sel.X.(*ast.Ident)
	if !ok || id.Obj != nil { // the parser binds Obj only to identifiers declared in this file
		return "", ""
	}
	return imports[id.Name], sel.Sel.Name
}

// moduleRoot walks up from the working directory to the directory holding go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// goFiles returns the .go files under root/dir as slash-separated paths
// relative to root, skipping what the go command skips: vendor, testdata,
// directories starting with "." or "_", and nested modules. A missing dir
// yields no files.
func goFiles(t *testing.T, root, dir string) []string {
	t.Helper()
	start := filepath.Join(root, dir)
	var files []string
	err := filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == start && os.IsNotExist(err) {
				return fs.SkipDir
			}
			return err
		}
		if d.IsDir() {
			if path == start {
				return nil
			}
			name := d.Name()
			if name == "vendor" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return fs.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func nonTestFiles(files []string) []string {
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			out = append(out, f)
		}
	}
	return out
}

// parseFile parses root/rel without type-checking, so the rules apply to
// packages that do not compile yet. A syntax error is reported, and whatever
// part of the file did parse is still returned for checking.
func parseFile(t *testing.T, fset *token.FileSet, root, rel string) *ast.File {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	file, err := parser.ParseFile(fset, rel, src, parser.ParseComments)
	if err != nil {
		t.Errorf("%s: cannot parse, rules checked only partially: %v", rel, err)
	}
	return file
}

// ruleCase is a one-function source file for testing a rule: imports go on
// line 3 and body on line 6, so want can name the line ("x.go:6: go statement").
type ruleCase struct {
	imports, body, want string
}

func (c ruleCase) source() string {
	if c.imports == "" {
		c.imports = "()"
	}
	return fmt.Sprintf("package p\n\nimport %s\n\nfunc f() {\n\t%s\n}\n", c.imports, c.body)
}

func parseSource(t *testing.T, src string) (*token.FileSet, *ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatalf("bad test source: %v\n%s", err, src)
	}
	return fset, file
}

func TestPurityRulesCatchViolations(t *testing.T) {
	cases := []ruleCase{
		{`"time"`, `_ = time.Now()`, `x.go:6: time.Now`},
		{`tm "time"`, `_ = tm.Now()`, `x.go:6: time.Now`},
		{`mr "math/rand"`, `_ = mr.Intn(3)`, `x.go:6: global "math/rand" function rand.Intn`},
		{`"math/rand/v2"`, `_ = rand.IntN(3)`, `x.go:6: global "math/rand/v2" function rand.IntN`},
		{`"math/rand/v2"`, `_ = rand.N(3)`, `rand.N`},
		{``, `go f()`, `x.go:6: go statement`},
		{``, `select {}`, `x.go:6: select statement`},
		{``, `var c chan int; c <- 1`, `x.go:6: channel send`},
		{``, `var c chan int; <-c`, `x.go:6: channel receive`},
		{``, `_ = make(chan struct{}, 1)`, `x.go:6: channel type`},
		{`. "time"`, `_ = Now()`, `x.go:3: dot import of "time"`},
	}
	for name := range forbiddenTimeFuncs { // a reference is as bad as a call
		cases = append(cases, ruleCase{`"time"`, `_ = time.` + name, `x.go:6: time.` + name + ` is not allowed`})
	}
	for _, name := range []string{"Intn", "Float64", "Shuffle", "Seed", "Perm", "Int63", "Uint64", "Read"} {
		cases = append(cases, ruleCase{`"math/rand"`, `_ = rand.` + name, `rand.` + name + ` is not allowed`})
	}
	for _, path := range []string{
		"net", "net/http", "net/rpc", "os", "os/exec", "os/signal", "syscall", "io/ioutil", "unsafe",
		"crypto/rand", "context", "sync", "sync/atomic", "google.golang.org/grpc",
		"google.golang.org/grpc/codes", "github.com/cockroachdb/pebble", "github.com/cockroachdb/pebble/vfs",
	} {
		cases = append(cases, ruleCase{`_ "` + path + `"`, ``, `x.go:3: import "` + path + `" is not allowed`})
	}
	format := regexp.MustCompile(`^x\.go:\d+: .+ is not allowed in pure package internal/p \(STYLE\.md habit 1\)$`)
	for _, c := range cases {
		fset, file := parseSource(t, c.source())
		findings := checkPurity(fset, file, "internal/p")
		if !containsFinding(findings, c.want) {
			t.Errorf("checkPurity missed %q in\n%s\nfindings: %q", c.want, c.source(), findings)
		}
		for _, f := range findings {
			if !format.MatchString(f) {
				t.Errorf("finding %q does not have the documented format", f)
			}
		}
	}

	fset, file := parseSource(t, cleanPureSource)
	if findings := checkPurity(fset, file, "internal/p"); len(findings) > 0 {
		t.Errorf("checkPurity flagged clean source:\n%s", strings.Join(findings, "\n"))
	}
}

// cleanPureSource uses time and math/rand the way a pure package should.
const cleanPureSource = `package p

import (
	"math/rand"
	randv2 "math/rand/v2"
	"time"
)

// Comments may say time.Now(), go f() and rand.Intn(3).
type env struct {
	rng  *rand.Rand
	pcg  *randv2.PCG
	zipf *randv2.Zipf
	tick time.Duration
}

func newEnv(seed int64) *env {
	r := randv2.New(randv2.NewPCG(1, 2))
	return &env{
		rng:  rand.New(rand.NewSource(seed)),
		zipf: randv2.NewZipf(r, 1.1, 1, 100),
		tick: 10 * time.Millisecond,
	}
}

func (e *env) step(now time.Time) (int, string) {
	rand := rand.New(rand.NewSource(now.UnixNano())) // shadows the import
	deadline := now.Add(e.tick).Sub(time.Unix(0, 0))
	_ = deadline
	return e.rng.Intn(10) + rand.Intn(10), "time.Sleep"
}
`

func TestLoggerRulesCatchViolations(t *testing.T) {
	cases := []ruleCase{
		{`"log"`, `log.Printf("x")`, `x.go:6: log.Printf uses the global logger`},
		{`"log"`, `log.Println("x")`, `log.Println`},
		{`"log"`, `log.Fatal("x")`, `log.Fatal`},
		{`"log"`, `log.Panicf("x")`, `log.Panicf`},
		{`stdlog "log"`, `stdlog.Print("x")`, `x.go:6: log.Print uses`},
		{`"log/slog"`, `slog.Info("x")`, `x.go:6: log/slog.Info uses`},
		{`"log/slog"`, `slog.Debug("x")`, `log/slog.Debug`},
		{`"log/slog"`, `slog.Warn("x")`, `log/slog.Warn`},
		{`"log/slog"`, `slog.Error("x")`, `log/slog.Error`},
		{`"log/slog"`, `slog.Log(nil, slog.LevelInfo, "x")`, `log/slog.Log`},
		{`"log/slog"`, `slog.SetDefault(nil)`, `log/slog.SetDefault`},
	}
	for _, c := range cases {
		fset, file := parseSource(t, c.source())
		if findings := checkGlobalLoggers(fset, file); !containsFinding(findings, c.want) {
			t.Errorf("checkGlobalLoggers missed %q in\n%s\nfindings: %q", c.want, c.source(), findings)
		}
	}

	clean := ruleCase{imports: `("log"; "log/slog"; "os")`, body: `logger := slog.New(slog.NewTextHandler(os.Stderr, nil)); ` +
		`logger.Info("x", slog.String("k", "v")); logger.Error("y"); log.New(os.Stderr, "", 0).Printf("z")`}
	fset, file := parseSource(t, clean.source())
	if findings := checkGlobalLoggers(fset, file); len(findings) > 0 {
		t.Errorf("checkGlobalLoggers flagged clean source:\n%s", strings.Join(findings, "\n"))
	}
}

func containsFinding(findings []string, want string) bool {
	for _, f := range findings {
		if strings.Contains(f, want) {
			return true
		}
	}
	return false
}
