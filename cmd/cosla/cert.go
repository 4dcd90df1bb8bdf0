package main

import (
	"fmt"
	"io"

	"github.com/cosla/cosla/internal/runtime/certs"
)

// runClusterCertClient issues a client certificate: cosla cluster cert
// client NAME [--dir DIR].
func runClusterCertClient(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("cluster cert client", "cosla cluster cert client NAME [--dir DIR]", "Issues client NAME a certificate of the cluster's authority, into DIR/tls as\n"+
		"client-NAME.pem and client-NAME-key.pem (readable by their owner only). Its holder may\nsend as client SITE/NAME or SITE/NAME-SUFFIX only: nodes refuse any other client ID from\n"+
		"it. NAME is letters, digits, '_' and '.'. A certificate already issued is kept.", stderr)
	dir := fs.String("dir", defaultDir(), "directory of the cluster (cluster up's --dir) or of the plan (cluster plan's --dir): its tls directory holds the authority")
	if err := parseArgs(fs, args, operandCount(1, 1, "want: cosla cluster cert client NAME [--dir DIR]")); err != nil {
		return err
	}
	name := fs.Arg(0)
	files, created, err := certs.IssueClient(certs.ClusterDir(*dir), name)
	if err != nil {
		return err
	}
	verb := "issued"
	if !created {
		verb = "kept the existing"
	}
	fmt.Fprintf(stdout, "%s client certificate %q:\n  cert %s\n  key  %s\n  ca   %s\n", verb, name, files.Cert, files.Key, files.CA)
	fmt.Fprintf(stdout, "its holder sends as SITE/%s or SITE/%s-SUFFIX; in Go: cosla.LoadTLS(cert, key, ca)\n", name, name)
	return nil
}
