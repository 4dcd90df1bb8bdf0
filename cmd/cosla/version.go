package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// buildVersion is what version prints: the module's version and the
// source revision the binary was built from, as the go command recorded
// them (runtime/debug.ReadBuildInfo).
type buildVersion struct {
	Version  string `json:"version"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

func readBuildVersion() buildVersion {
	v := buildVersion{Version: "(unknown)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if info.Main.Version != "" {
		v.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("version", "cosla version [--json]", "Prints the version of this binary's module, the Go version and platform it was built\n"+
		"with, and the source revision (with its time, and whether the tree had changes) when it was\nbuilt from a version-controlled tree.", stderr)
	jsonOut := fs.Bool("json", false, "print JSON")
	if err := parseArgs(fs, args, noOperands); err != nil {
		return err
	}
	v := readBuildVersion()
	return emitLine(stdout, *jsonOut, v, func() error {
		fmt.Fprintf(stdout, "cosla %s (%s, %s)\n", v.Version, v.Go, v.Platform)
		if v.Revision != "" {
			modified := ""
			if v.Modified {
				modified = ", with uncommitted changes"
			}
			fmt.Fprintf(stdout, "revision %s (%s%s)\n", v.Revision, v.Time, modified)
		}
		return nil
	})
}
