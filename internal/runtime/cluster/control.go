package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/runtime/hostcheck"
	"github.com/cosla/cosla/internal/runtime/private"
)

// TokenFile is the name, in the cluster directory, of the file holding
// the control API's token: readable by its owner only, written anew at
// every start. A request to the control API carries it as
// "Authorization: Bearer TOKEN".
const TokenFile = "control-token"

// ErrControlRefused is returned when the control API refuses a request:
// a wrong token, a foreign Host or a body that is not JSON.
var ErrControlRefused = errors.New("cosla: the cluster's control API refused the request")

// newToken writes a fresh random token into dir's TokenFile and returns
// it.
func newToken(dir string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	token := hex.EncodeToString(b[:])
	if err := private.WriteFileAtomic(filepath.Join(dir, TokenFile), []byte(token+"\n")); err != nil {
		return "", fmt.Errorf("cluster: control token: %w", err)
	}
	return token, nil
}

// readToken reads the control API's token from dir.
func readToken(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, TokenFile))
	if err != nil {
		return "", fmt.Errorf("cosla: the cluster's control token: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// serveControl starts the control API on a loopback port, behind guard
// with a new token.
func (c *Cluster) serveControl() error {
	token, err := newToken(c.opts.Dir)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	c.info.Control = lis.Addr().String()
	c.control = &http.Server{Handler: guard(c.info.Control, token, c.controlHandler()), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = c.control.Serve(lis) }()
	return nil
}

// guard puts the control API behind three checks, so that only a process
// of the directory's owner can use it: the Host header names the listener
// (hostcheck, against DNS rebinding), the request carries the token of
// TokenFile, and a body is JSON. A web page can send a "simple" POST
// (text/plain, no header of its own) to any port of the machine without
// asking; the token and the content type each take that away.
func guard(listen, token string, h http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return hostcheck.Handler(listen, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "cosla: the control API wants the token of "+TokenFile+" in the cluster directory, as Authorization: Bearer TOKEN", http.StatusForbidden)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				http.Error(w, "cosla: the control API takes Content-Type: application/json", http.StatusUnsupportedMediaType)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
}

// request sends a request to the control API with the token, and a JSON
// body if body is not nil, and returns the response of status 200. A
// refusal wraps ErrControlRefused.
func (c *Control) request(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+c.addr+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	text := strings.TrimSpace(string(msg))
	if resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnsupportedMediaType {
		return nil, fmt.Errorf("%w: %s", ErrControlRefused, text)
	}
	return nil, errors.New(text)
}
