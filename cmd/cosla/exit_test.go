package main

// Tests of the command line as a whole: every command and group, found
// in the command table, refuses bad input with exit 2 and a message
// before it looks for a cluster, answers -h with a help text that says
// what it does, and takes its flags before or after its operands.

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/cosla/cosla/internal/core/clientcore"
)

// walkCommands calls leaf for every command that runs (bench too, which
// also has a subcommand) and group for every one that has subcommands,
// with their paths after "cosla".
func walkCommands(cmds []command, path []string, leaf, group func(path []string)) {
	for _, c := range cmds {
		p := append(slices.Clone(path), c.name)
		if c.run != nil {
			leaf(p)
		}
		if len(c.subs) > 0 {
			if c.run == nil {
				group(p)
			}
			walkCommands(c.subs, p, leaf, group)
		}
	}
}

// writeFile writes a file in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// badInputs gives each command a command line with bad input, and what the
// message must say. dir holds no cluster: a command that got past its
// input checks would fail there with exit 1 instead.
func badInputs(t *testing.T, dir string) map[string]struct {
	args []string
	want string
} {
	missing := filepath.Join(dir, "missing")
	bigValue := writeFile(t, dir, "big", strings.Repeat("v", clientcore.DefaultMaxValueBytes+1))
	script := writeFile(t, dir, "script.txt", "put k v\nfrob k\n")
	scenario := writeFile(t, dir, "cpq.yaml", "name: cpq\nslas: [{sla: password-checking}]\nstrategies: [cpq(1.5)]\n")
	manySubSLAs := writeFile(t, dir, "many.sla", strings.Repeat("eventual 1s 1\n", 65))
	type bad = struct {
		args []string
		want string
	}
	return map[string]bad{
		"demo":             {[]string{"--keys", "0"}, "must be positive"},
		"cluster up":       {[]string{"--dir", dir, "--tablets", "0"}, "--tablets 0: a table needs at least one tablet"},
		"cluster down":     {[]string{"--dir", dir, "now"}, `unexpected argument "now"`},
		"cluster status":   {[]string{"--dir", dir, "all"}, `unexpected argument "all"`},
		"cluster link set": {[]string{"--dir", dir, "england", "us", "--latency", "-5ms"}, "--latency -5ms: a round-trip time must not be negative"},
		"cluster plan": {[]string{"--dir", filepath.Join(dir, "plan"), "--host", "england=not a host", "--host", "us=10.0.0.2", "--host", "india=10.0.0.3"},
			"--host england=not a host: want the host's address"},
		"cluster init":        {[]string{"--config", missing, "--timeout", "0s"}, "--timeout 0s: want a positive duration"},
		"cluster cert client": {[]string{"--dir", dir, "bad-name"}, "bad client name"},
		"cluster failover":    {[]string{"--dir", dir, "--table", "t", "--to", "us/r1"}, `--to "us/r1": want a site`},
		"cluster replica add": {[]string{"--dir", dir, "--table", "t", "--node", "india"}, `--node "india": want a storage node SITE/NAME`},
		"cluster replica remove": {[]string{"--dir", dir, "--table", "t", "--tablet", "-1", "--node", "india/r1"},
			"--tablet -1: want a tablet's index"},
		"put":             {[]string{"--dir", dir, "--value-file", bigValue, "k"}, "over the value limit of 1048576 bytes"},
		"get":             {[]string{"--dir", dir, "--sla", "  ", "k"}, "the SLA is empty"},
		"rtw":             {[]string{"--dir", dir, "t", "k", "v"}, "want TESTKEY EXPECT WRITEKEY VALUE"},
		"gettx":           {[]string{"--dir", dir, "--timeout", "0s", "k"}, "--timeout 0s: want a positive duration"},
		"session run":     {[]string{"--dir", dir, script}, `script.txt:2: unknown operation "frob"`},
		"bench":           {[]string{"--dir", dir, "--clients", "0"}, "--clients must be between 1 and"},
		"bench compare":   {[]string{"--targets", "oracle"}, "--targets"},
		"serve":           {[]string{"--log-level", "debug"}, "want --config FILE"},
		"experiment list": {[]string{"all"}, `unexpected argument "all"`},
		"experiment run":  {[]string{scenario, "--out", filepath.Join(dir, "out")}, `strategies[0]: strategy "cpq(1.5)": want cpq(P) with P in [0, 1]`},
		"measure run":     {[]string{"--target", "sim"}, "--out is required"},
		"measure analyze": {[]string{missing}, "no such file"},
		"measure report":  {[]string{dir}, "want --out OUT"},
		"measure worker":  {[]string{"--target", "cosla"}, "--spec"},
		"sla show":        {[]string{"shoping-cart"}, `"shoping-cart" is not a preset`},
		"sla check":       {[]string{manySubSLAs}, "more than 64 subSLAs"},
		"chaos":           {[]string{"--dir", dir, "--faults", "meteor"}, "--faults"},
		"version":         {[]string{"--short"}, "flag provided but not defined: -short"},
	}
}

// TestEveryCommandRefusesBadInput runs every command of the command table
// with bad input and wants exit 2 with a message naming what is wrong,
// and an unknown flag refused the same way; every group without a
// subcommand, or with an unknown one, exits 2 too. A command added to the
// table without a case here fails the test.
func TestEveryCommandRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := badInputs(t, dir)
	check := func(t *testing.T, args []string, want string) {
		t.Helper()
		code, _, stderr := runCosla(t, args...)
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("cosla %s: exit %d, want %d with %q in stderr:\n%s", strings.Join(args, " "), code, exitUsage, want, stderr)
		}
		// The message, the last line, does not say cosla or the command
		// again after "cosla COMMAND: " ("cosla serve: cosla serve: ...").
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		last := lines[len(lines)-1]
		if _, msg, _ := strings.Cut(last, ": "); strings.HasPrefix(msg, "cosla") || strings.HasPrefix(msg, args[0]+" ") {
			t.Errorf("cosla %s: the message repeats its prefix: %q", strings.Join(args, " "), last)
		}
	}
	seen := map[string]bool{}
	walkCommands(commands(), nil, func(path []string) {
		name := strings.Join(path, " ")
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			tc, ok := cases[name]
			if !ok {
				t.Fatalf("no bad input for cosla %s: add a case to badInputs", name)
			}
			check(t, append(slices.Clone(path), tc.args...), tc.want)
			check(t, append(slices.Clone(path), "--no-such-flag"), "flag provided but not defined: -no-such-flag")
		})
	}, func(path []string) {
		name := strings.Join(path, " ")
		t.Run(name, func(t *testing.T) {
			check(t, path, "want a command:")
			check(t, append(slices.Clone(path), "frobnicate"), `unknown command "frobnicate"`)
		})
	})
	for name := range cases {
		if !seen[name] {
			t.Errorf("badInputs has a case for %q, which is not a command", name)
		}
	}
	check(t, []string{"frobnicate"}, `unknown command "frobnicate"`)
}

// TestNoArguments: cosla alone prints its help on stderr and exits 2.
func TestNoArguments(t *testing.T) {
	code, stdout, stderr := runCosla(t)
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "Usage: cosla <command>") {
		t.Errorf("cosla: exit %d, stdout %q, stderr:\n%s\nwant exit %d and the help on stderr only", code, stdout, stderr, exitUsage)
	}
}

// TestEveryCommandHasHelp runs every command and group with -h: each
// exits 0 and prints a usage line and a text that says what it does.
func TestEveryCommandHasHelp(t *testing.T) {
	check := func(path []string) {
		name := strings.Join(path, " ")
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runCosla(t, append(slices.Clone(path), "-h")...)
			help := stdout + stderr
			usage := "Usage: cosla " + name
			i := strings.Index(help, usage)
			if code != exitDone || i < 0 {
				t.Fatalf("cosla %s -h: exit %d, want 0 and %q in:\n%s", name, code, usage, help)
			}
			// The text besides the usage line and the flags.
			about := strings.Replace(help, help[i:i+strings.IndexByte(help[i:]+"\n", '\n')], "", 1)
			about, _, _ = strings.Cut(about, "Flags:")
			if letters := strings.Count(strings.Map(func(r rune) rune {
				if unicode.IsLetter(r) {
					return 'x'
				}
				return -1
			}, about), "x"); letters < 30 {
				t.Errorf("cosla %s -h says little about what it does (%d letters besides the usage line and flags):\n%s", name, letters, help)
			}
		})
	}
	walkCommands(commands(), nil, check, check)
}

// TestFlagsAfterOperands: flags may follow operands in any command, as
// parseFlags reorders them; an operand that starts with a dash follows
// "--".
func TestFlagsAfterOperands(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("site", "", "")
	fs.Bool("json", false, "")
	for _, tc := range []struct {
		args, want []string
	}{
		{[]string{"k", "--site", "us"}, []string{"--site", "us", "--", "k"}},
		{[]string{"k", "--json", "v"}, []string{"--json", "--", "k", "v"}},
		{[]string{"--site=us", "k", "-json"}, []string{"--site=us", "-json", "--", "k"}},
		{[]string{"k", "-", "-5", "-0.5"}, []string{"--", "k", "-", "-5", "-0.5"}},
		{[]string{"k", "--", "--site", "-v"}, []string{"--", "k", "--site", "-v"}},
		{[]string{"k", "--frob", "v"}, []string{"--frob", "--", "k", "v"}},
		{[]string{"k", "--site"}, []string{"--site", "--", "k"}},
	} {
		if got := interleave(fs, tc.args); !slices.Equal(got, tc.want) {
			t.Errorf("interleave(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
	// Through whole commands: --dir after the key is read (the command
	// then finds no cluster there), and sla show's --json after its SLA.
	dir := t.TempDir()
	if code, _, stderr := runCosla(t, "get", "k", "--dir", dir); code != exitFailed || !strings.Contains(stderr, "no cluster running in "+dir) {
		t.Errorf("cosla get k --dir %s: exit %d, want %d saying no cluster runs there:\n%s", dir, code, exitFailed, stderr)
	}
	_, before, _ := runCosla(t, "sla", "show", "--json", "shopping-cart")
	if code, after, stderr := runCosla(t, "sla", "show", "shopping-cart", "--json"); code != exitDone || after != before || !strings.HasPrefix(after, "{") {
		t.Errorf("cosla sla show shopping-cart --json: exit %d, %q, want the JSON of --json first %q; stderr:\n%s", code, after, before, stderr)
	}
}

// TestFlagsParsedInOnePlace keeps every command's flags going through
// parseFlags, which lets them follow the operands: package flag alone
// stops at the first operand.
func TestFlagsParsedInOnePlace(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(src), "fs.Parse("); n > 0 && !(file == "main.go" && n == 1) {
			t.Errorf("%s calls fs.Parse %d times: parse a command's flags with parseFlags", file, n)
		}
	}
}

// TestExitCodes maps errors of each kind to the policy's codes.
func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"done", nil, exitDone},
		{"help", flag.ErrHelp, exitDone},
		{"usage", usagef("want KEY"), exitUsage},
		{"invalid request", wrap(clientcore.ErrInvalid), exitUsage},
		{"key too large", wrap(clientcore.ErrTooLarge), exitUsage},
		{"unknown table", wrap(clientcore.ErrNoTable), exitUsage},
		{"missing file", wrap(os.ErrNotExist), exitUsage},
		{"unmet", wrap(clientcore.ErrSLAUnmet), exitUnmet},
		{"null", wrap(clientcore.ErrNull), exitUnmet},
		{"test failed", testFailedError{os.ErrClosed}, exitUnmet},
		{"timeout", wrap(clientcore.ErrTimeout), exitFailed},
		{"overloaded", wrap(clientcore.ErrOverloaded), exitFailed},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("%s: exitCode(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}

func wrap(err error) error { return fmt.Errorf("op: %w", err) }
