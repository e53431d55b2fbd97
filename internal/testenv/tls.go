package testenv

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// Serve starts h on 127.0.0.1, over HTTPS when tls; it stops when the test
// ends. An HTTPS server's certificate is httptest's own, for 127.0.0.1 and
// signed by itself: no system trusts it, so a client reaches the server
// only with CAFile.
func Serve(t testing.TB, h http.Handler, tls bool) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(h)
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv
}

// CAFile writes the certificate of the HTTPS server srv to a PEM file and
// returns its path: the bundle a client is given to trust the server.
func CAFile(t testing.TB, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatalf("write CA file: %v", err)
	}
	return path
}
