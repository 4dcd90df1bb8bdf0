// Package clientfile is the client configuration file of a cluster whose
// sites run on their own hosts: where the client runs, the address of
// every storage node, and the client certificate. `cosla cluster plan`
// writes one; the CLI reads it with --config and the Go client with
// cosla.LoadConfig. A local cluster (`cosla cluster up`) needs none: its
// directory describes it.
//
//	site: england
//	table: usertable
//	nodes:
//	  england/r1: 10.0.0.1:7100
//	  us/r1: 10.0.0.2:7100
//	tls: {cert: client.pem, key: client-key.pem, ca: ca.pem}
//
// Relative paths are relative to the file's directory, so the directory
// can be copied anywhere whole.
package clientfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cosla/cosla/internal/runtime/certs"
	"github.com/cosla/cosla/internal/runtime/private"
)

// ErrInvalid is wrapped by every error about a file's contents.
var ErrInvalid = errors.New("cosla: invalid client config")

// File is a client configuration file.
type File struct {
	// Site is where the client runs (a site of the topology; client-only
	// sites too). Required.
	Site string `yaml:"site"`
	// Table is the table the CLI uses when --table is not given.
	Table string `yaml:"table,omitempty"`
	// Nodes maps every storage node ("england/r1") to the address the
	// client dials. Required.
	Nodes map[string]string `yaml:"nodes"`
	// TLS names the client certificate, its key and the cluster's
	// authority. Required unless Insecure.
	TLS certs.Files `yaml:"tls,omitempty"`
	// Insecure connects without TLS, to nodes started with insecure.
	Insecure bool `yaml:"insecure,omitempty"`
	// Create is the table `cosla cluster init` creates: the placement the
	// plan chose. Other commands ignore it.
	Create *Table `yaml:"create,omitempty"`
}

// Table is a table's placement, as the public cosla.TableSpec, in the
// file's words.
type Table struct {
	Name string `yaml:"name"`
	// Partition is range or hash.
	Partition    string        `yaml:"partition"`
	PullInterval time.Duration `yaml:"pull_interval"`
	Push         bool          `yaml:"push,omitempty"`
	// WriteLevel is one, quorum, all or a number; empty is one.
	WriteLevel string   `yaml:"write_level,omitempty"`
	Tablets    []Tablet `yaml:"tablets"`
}

// Tablet places one tablet: its first key (or key hash) and its replicas.
type Tablet struct {
	Start       string   `yaml:"start"`
	Primary     string   `yaml:"primary"`
	Secondaries []string `yaml:"secondaries,omitempty"`
}

// Load reads a file, rejecting unknown fields, makes its relative paths
// relative to the file's directory, and validates it.
func Load(path string) (File, error) {
	var f File
	data, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	dir := filepath.Dir(path)
	for _, p := range []*string{&f.TLS.Cert, &f.TLS.Key, &f.TLS.CA} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	if err := f.Validate(); err != nil {
		return f, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Validate reports the first invalid field, naming it.
func (f *File) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	switch {
	case f.Site == "" || strings.Contains(f.Site, "/"):
		return bad("site must be a non-empty name without '/', got %q", f.Site)
	case len(f.Nodes) == 0:
		return bad("nodes: want every storage node and its address, e.g. england/r1: 10.0.0.1:7100")
	case f.Insecure && f.TLS != certs.Files{}:
		return bad("tls and insecure: choose one")
	case !f.Insecure && (f.TLS.Cert == "" || f.TLS.Key == "" || f.TLS.CA == ""):
		return bad("tls: cert, key and ca are required (cosla cluster plan writes them), or set insecure to connect without TLS")
	}
	for id, addr := range f.Nodes {
		if site, name, ok := strings.Cut(id, "/"); !ok || site == "" || name == "" {
			return bad("nodes: %q is not site/node", id)
		}
		if addr == "" {
			return bad("nodes: %s has no address", id)
		}
	}
	return nil
}

// Write writes f to path, readable by its owner only: it names the
// client's key.
func Write(path string, f File) error {
	data, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	header := "# cosla client config: cosla --config THIS_FILE, or cosla.LoadConfig in Go.\n" +
		"# Paths are relative to this file's directory.\n"
	return private.WriteFile(path, append([]byte(header), data...))
}
