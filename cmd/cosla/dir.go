package main

import (
	"os"
	"strings"

	"github.com/cosla/cosla/internal/runtime/cluster"
)

// dirEnv names the environment variable that sets the default --dir of
// every command that uses a local cluster.
const dirEnv = "COSLA_DIR"

// defaultDir is the default --dir of the commands that use a local
// cluster: $COSLA_DIR, else cluster.DefaultDir().
func defaultDir() string {
	if d := os.Getenv(dirEnv); d != "" {
		return d
	}
	return cluster.DefaultDir()
}

// dirArg is what a command suggested to the user adds to reach the cluster
// in dir: nothing for the default directory, else --dir and dir, quoted
// for a shell when it needs to be.
func dirArg(dir string) string {
	if dir == defaultDir() {
		return ""
	}
	return " --dir " + shellQuote(dir)
}

// shellQuote quotes s for a POSIX shell unless it needs no quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+:,=@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
