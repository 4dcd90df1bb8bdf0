package cluster

import (
	"fmt"
	"strings"

	"github.com/cosla/cosla/internal/runtime/certs"
)

// CheckClients reports why clients cannot be issued certificates (their
// names, or a cluster without TLS), or nil.
func CheckClients(clients []string, insecure bool) error {
	if len(clients) > 0 && insecure {
		return fmt.Errorf("cosla: client certificates (%s) for a cluster without TLS", strings.Join(clients, ", "))
	}
	for _, name := range clients {
		if err := certs.ValidClientName(name); err != nil {
			return err
		}
	}
	return nil
}

// issueCerts makes dir hold the cluster's authority, each site's node
// certificate, the default client's and each of clients'.
func issueCerts(dir string, sites, clients []string) error {
	if err := certs.Ensure(dir, sites); err != nil {
		return fmt.Errorf("cluster: certificates: %w", err)
	}
	for _, name := range clients {
		if _, _, err := certs.IssueClient(dir, name); err != nil {
			return fmt.Errorf("cluster: certificates: %w", err)
		}
	}
	return nil
}
