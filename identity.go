package cosla

import (
	cryptorand "crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/cosla/cosla/internal/runtime/certs"
)

// clientName returns the name a client opened with cfg goes by, its ID
// being "site/name". Over TLS the client certificate names the client,
// and a node takes messages only from the IDs the certificate allows
// (certs.CheckClientID): Config.Name must be NAME or NAME-SUFFIX, and an
// empty one becomes NAME-<8 random hex digits>, so that many clients may
// share a certificate, each with an ID of its own. Without TLS an empty
// Name becomes c-<8 random hex digits>.
func clientName(cfg Config) (string, error) {
	if strings.Contains(cfg.Name, "/") {
		return "", fmt.Errorf("%w: Config.Name %q contains '/'", ErrInvalid, cfg.Name)
	}
	if cfg.TLS == nil {
		if cfg.Name != "" {
			return cfg.Name, nil
		}
		return "c-" + randomHex(), nil
	}
	if cfg.Name == "" {
		name, err := certs.ClientNodeName(cfg.TLS, randomHex())
		if err != nil {
			return "", fmt.Errorf("%w: Config.TLS: %w", ErrInvalid, err)
		}
		return name, nil
	}
	cert, err := certs.ClientName(cfg.TLS)
	if err != nil {
		return "", fmt.Errorf("%w: Config.TLS: %w", ErrInvalid, err)
	}
	if err := certs.CheckClientID(cert, cfg.Site+"/"+cfg.Name); err != nil {
		return "", fmt.Errorf("%w: Config.Name %q does not agree with the client certificate, which names %q: want %q, %q-SUFFIX or none: %w",
			ErrInvalid, cfg.Name, cert, cert, cert, err)
	}
	return cfg.Name, nil
}

// randomHex returns 8 random hex digits.
func randomHex() string {
	var b [4]byte
	_, _ = cryptorand.Read(b[:])
	return hex.EncodeToString(b[:])
}
