package scm

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"

	"github.com/gpu-rightsizing/recommender/internal/localfile"
)

// ReadCABundle reads a PEM file of CA certificates that a forge's
// private CA signed: a regular file within localfile.MaxKey holding at
// least one certificate.
func ReadCABundle(path string) ([]byte, error) {
	b, err := localfile.Read(path, localfile.MaxKey)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", path)
	}
	return b, nil
}

// CATransport is http.DefaultTransport trusting the certificates of
// bundle besides the system's roots: the forge's API then verifies as
// git over HTTPS does with Auth.CABundle.
func CATransport(bundle []byte) (*http.Transport, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		// No system pool (or none readable): the bundle alone.
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(bundle) {
		return nil, fmt.Errorf("CA bundle: no PEM certificate in it")
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	return t, nil
}
