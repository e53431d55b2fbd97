package prometheus_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// hang bounds what must return at once and would otherwise hang or run
// for hours: a minute, which a loaded 2-core machine under -race does
// not take for work of milliseconds, and which tells it from a hang.
const hang = time.Minute

// gate is a reverse proxy to a real server that records what reaches it
// and may answer in its place.
type gate struct {
	mu       sync.Mutex
	requests []*http.Request
	queries  []string
	// answer, when it returns true, has answered the request itself.
	answer func(w http.ResponseWriter, r *http.Request) bool
	proxy  *httputil.ReverseProxy
	prefix string
}

func newGate(t *testing.T, target, prefix string) (*gate, *httptest.Server) {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	g := &gate{proxy: httputil.NewSingleHostReverseProxy(u), prefix: prefix}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, srv
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	g.requests = append(g.requests, r.Clone(r.Context()))
	g.queries = append(g.queries, r.Form.Get("query"))
	answer := g.answer
	g.mu.Unlock()
	if !strings.HasPrefix(r.URL.Path, g.prefix+"/api/") {
		http.NotFound(w, r)
		return
	}
	if answer != nil && answer(w, r) {
		return
	}
	r.URL.Path = strings.TrimPrefix(r.URL.Path, g.prefix)
	// The form was read: send it on as a query string.
	r.URL.RawQuery, r.Body, r.ContentLength, r.Method = r.Form.Encode(), http.NoBody, 0, http.MethodGet
	r.Header.Del("Content-Type")
	g.proxy.ServeHTTP(w, r)
}

func (g *gate) seen() ([]*http.Request, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.requests, g.queries
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func clusterQuery() usage.Query {
	return usage.Query{
		At: metricstest.T0.Add(9 * time.Minute), Lookback: time.Hour, Metrics: metricstest.KubexMetrics(),
		Workloads: []usage.Ref{metricstest.Deployment("team-a", "chat"), metricstest.Deployment("team-b", "chat")},
	}
}

// Credentials, headers, a path prefix and the extra matcher reach the
// server as a Mimir or an authenticating proxy wants them.
func TestPrometheusRequestShape(t *testing.T) {
	srv := testenv.StartPrometheus(t, filepath.Join("..", "testdata", "cluster.om"))
	if srv == nil {
		return
	}
	rec, err := openmetrics.OpenRecorded(filepath.Join("..", "testdata", "cluster.om"))
	require.NoError(t, err)
	want, err := rec.Usage(context.Background(), clusterQuery())
	require.NoError(t, err)

	token := writeFile(t, "token", "s3cret-token\n")
	password := writeFile(t, "password", "hunter2")
	t.Setenv("TEST_PROM_TOKEN", "env-token")
	tests := []struct {
		name   string
		prefix string
		cfg    func(c *prometheus.Config)
		check  func(t *testing.T, r *http.Request)
	}{
		{
			name: "bearer token from a file",
			cfg:  func(c *prometheus.Config) { c.BearerTokenFile = token },
			check: func(t *testing.T, r *http.Request) {
				require.Equal(t, "Bearer s3cret-token", r.Header.Get("Authorization"))
			},
		},
		{
			name: "bearer token from the environment",
			cfg:  func(c *prometheus.Config) { c.BearerTokenEnv = "TEST_PROM_TOKEN" },
			check: func(t *testing.T, r *http.Request) {
				require.Equal(t, "Bearer env-token", r.Header.Get("Authorization"))
			},
		},
		{
			name: "basic auth",
			cfg:  func(c *prometheus.Config) { c.BasicAuthUser, c.BasicAuthPasswordFile = "reader", password },
			check: func(t *testing.T, r *http.Request) {
				user, pw, ok := r.BasicAuth()
				require.True(t, ok)
				require.Equal(t, "reader", user)
				require.Equal(t, "hunter2", pw)
			},
		},
		{
			name:   "Mimir: a path prefix and a tenant header",
			prefix: "/prometheus",
			cfg: func(c *prometheus.Config) {
				c.Headers = http.Header{"X-Scope-OrgID": {"tenant-1"}}
			},
			check: func(t *testing.T, r *http.Request) {
				require.Equal(t, "tenant-1", r.Header.Get("X-Scope-OrgID"))
				require.Empty(t, r.Header.Get("Authorization"))
			},
		},
		{
			name:   "a path prefix with a trailing slash",
			prefix: "/prometheus",
			cfg:    func(c *prometheus.Config) { c.URL += "/" },
			check:  func(*testing.T, *http.Request) {},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, front := newGate(t, srv.URL, tt.prefix)
			prom := newPrometheus(t, front.URL+tt.prefix, tt.cfg)
			got, err := prom.Usage(context.Background(), clusterQuery())
			require.NoError(t, err)
			require.Equal(t, metricstest.Workloads(want), metricstest.Workloads(got))
			reqs, _ := g.seen()
			require.NotEmpty(t, reqs)
			for _, r := range reqs {
				require.Equal(t, tt.prefix+"/api/v1/query", r.URL.Path)
				tt.check(t, r)
			}
		})
	}

	t.Run("the extra matcher is in every selector, the namespaces in one regexp", func(t *testing.T) {
		g, front := newGate(t, srv.URL, "")
		prom := newPrometheus(t, front.URL, func(c *prometheus.Config) {
			c.Matcher = &prometheus.LabelMatcher{Name: "cluster", Value: "prod-eu"}
		})
		got, err := prom.Usage(context.Background(), clusterQuery())
		require.NoError(t, err)
		require.Empty(t, got.Workloads, "the recording has no cluster label")
		_, queries := g.seen()
		require.Len(t, queries, 6, "two selectors over the hour, its first 15 minutes then the rest, and the pods' ending phases over their last 15 minutes")
		for _, q := range queries {
			require.Contains(t, q, `cluster="prod-eu"`)
			require.Regexp(t, `namespace=~"team-a\|team-b"`, q)
			require.Regexp(t, regexp.MustCompile(`^\{__name__=~"[^"]+", (exported_)?namespace=~"[^"]+", cluster="prod-eu"\}\[(15m|45m)\]$|`+
				`^\{__name__="kube_pod_status_phase", phase=~"Failed\|Succeeded", (exported_)?namespace=~"[^"]+", cluster="prod-eu"\}\[15m\]$`), q)
		}
	})

	t.Run("wrong credentials: the error names the server and the status, not the token", func(t *testing.T) {
		g, front := newGate(t, srv.URL, "")
		g.answer = func(w http.ResponseWriter, _ *http.Request) bool {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return true
		}
		prom := newPrometheus(t, front.URL, func(c *prometheus.Config) { c.BearerTokenFile = token })
		_, err := prom.Usage(context.Background(), clusterQuery())
		require.ErrorIs(t, err, prometheus.ErrUnavailable)
		require.Contains(t, err.Error(), "Prometheus at "+front.URL)
		require.Contains(t, err.Error(), "401")
		require.NotContains(t, err.Error(), "s3cret")
		reqs, _ := g.seen()
		require.LessOrEqual(t, len(reqs), 2, "a 401 is not retried: one request a selector at most")
	})

	t.Run("a range the server refuses to load at once is halved", func(t *testing.T) {
		g, front := newGate(t, srv.URL, "")
		g.answer = func(w http.ResponseWriter, r *http.Request) bool {
			if !strings.HasSuffix(r.Form.Get("query"), "[45m]") {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, testenv.ErrorBody("execution", "query processing would load too many samples into memory in query execution"))
			return true
		}
		got, err := newPrometheus(t, front.URL).Usage(context.Background(), clusterQuery())
		require.NoError(t, err)
		require.Equal(t, metricstest.Workloads(want), metricstest.Workloads(got))
		_, queries := g.seen()
		require.Len(t, queries, 10, "two selectors: the first 15 minutes, the 45 left refused, then their two halves; and the two of the pods' ending phases")
	})

	t.Run("an answer too long is asked for in halves, then refused", func(t *testing.T) {
		g, front := newGate(t, srv.URL, "")
		prom := newPrometheus(t, front.URL)
		prometheus.SetMaxResponseBytes(prom, 1000)
		_, err := prom.Usage(context.Background(), clusterQuery())
		require.ErrorIs(t, err, prometheus.ErrUnavailable)
		require.Contains(t, err.Error(), "answer too long")
		require.Contains(t, err.Error(), "over 11m15s", "halved from the 45 minutes after the first 15 down to the shortest range")
		reqs, _ := g.seen()
		require.LessOrEqual(t, len(reqs), 10, "15m, 45m, 22m30s twice and 11m15s for each of two selectors at most")
	})

	// A gzip answer that expands without end (gzip members of spaces,
	// valid JSON whitespace, 2 GiB each) is read only up to the bounds,
	// per answer and for all answers at once; what the answers took is
	// given back.
	t.Run("a gzip bomb is read only up to the bounds", func(t *testing.T) {
		var member bytes.Buffer
		zw, err := gzip.NewWriterLevel(&member, gzip.BestCompression)
		require.NoError(t, err)
		_, err = zw.Write(bytes.Repeat([]byte(" "), 16<<20))
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		bomb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			var head bytes.Buffer
			hw := gzip.NewWriter(&head)
			fmt.Fprint(hw, `{"status":"success","data":{"resultType":"matrix","result":[`)
			hw.Close()
			if _, err := w.Write(head.Bytes()); err != nil {
				return
			}
			for range 128 { // 2 GiB of spaces
				if _, err := w.Write(member.Bytes()); err != nil {
					return
				}
			}
		}))
		t.Cleanup(bomb.Close)
		prom := newPrometheus(t, bomb.URL)
		prometheus.SetBodyBounds(prom, 4<<20, 6<<20)
		start := time.Now()
		_, err = prom.Usage(context.Background(), clusterQuery())
		require.ErrorIs(t, err, prometheus.ErrUnavailable)
		require.Contains(t, err.Error(), "answer too long")
		require.Less(t, time.Since(start), hang, "2 GiB an answer was not read")
		require.EqualValues(t, 6<<20, prometheus.InFlightLeft(prom), "every answer gave back what it took")
	})

	t.Run("a server asking to wait too long is not waited for", func(t *testing.T) {
		proxy := testenv.NewFaultProxy(t, srv.URL)
		proxy.Set(testenv.RateLimited(time.Hour))
		start := time.Now()
		_, err := newPrometheus(t, proxy.URL).Usage(context.Background(), clusterQuery())
		require.ErrorIs(t, err, prometheus.ErrUnavailable)
		require.Contains(t, err.Error(), "too long a wait")
		require.Less(t, time.Since(start), hang)
	})

	t.Run("TLS: the server verified against a CA file, or not verified at all", func(t *testing.T) {
		g := &gate{proxy: httputil.NewSingleHostReverseProxy(mustURL(t, srv.URL))}
		front := httptest.NewUnstartedServer(g)
		front.Config.ErrorLog = quiet()
		front.StartTLS()
		t.Cleanup(front.Close)
		ca := writeFile(t, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw})))

		_, err := newPrometheus(t, front.URL).Usage(context.Background(), clusterQuery())
		require.ErrorIs(t, err, prometheus.ErrUnavailable, "an unknown CA")
		require.Contains(t, err.Error(), "certificate")

		got, err := newPrometheus(t, front.URL, func(c *prometheus.Config) { c.CAFile = ca }).Usage(context.Background(), clusterQuery())
		require.NoError(t, err)
		require.Equal(t, metricstest.Workloads(want), metricstest.Workloads(got))

		var logged strings.Builder
		got, err = newPrometheus(t, front.URL, func(c *prometheus.Config) {
			c.InsecureSkipVerify = true
			c.Logger = slogTo(&logged)
		}).Usage(context.Background(), clusterQuery())
		require.NoError(t, err)
		require.Equal(t, metricstest.Workloads(want), metricstest.Workloads(got))
		require.Contains(t, logged.String(), "not verifying the certificate")
	})
}

// quiet drops the TLS handshake errors the refusals make servers log.
func quiet() *log.Logger { return log.New(io.Discard, "", 0) }

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

func TestNewPrometheusRefuses(t *testing.T) {
	token := writeFile(t, "token", "s3cret-token")
	empty := writeFile(t, "empty", "\n")
	huge := writeFile(t, "huge", strings.Repeat("-----BEGIN CERTIFICATE-----\n", 40000))
	t.Setenv("TEST_PROM_EMPTY", "")
	tests := []struct {
		name    string
		cfg     prometheus.Config
		wantErr string
	}{
		{name: "no scheme", cfg: prometheus.Config{URL: "prometheus:9090"}, wantErr: "prometheus URL prometheus:9090: want http:// or https:// and a host"},
		{name: "a password in the URL", cfg: prometheus.Config{URL: "https://reader:s3cret@prom.example"},
			wantErr: "prometheus URL https://prom.example: carries a password; give it in a password file instead"},
		{name: "a query in the URL", cfg: prometheus.Config{URL: "https://prom.example/?x=1"}, wantErr: "prometheus URL https://prom.example/: a base URL takes no query or fragment"},
		{name: "token file and env", cfg: prometheus.Config{URL: "http://p", BearerTokenFile: token, BearerTokenEnv: "X"},
			wantErr: "prometheus bearer token: from a file or from the environment, not both"},
		{name: "token and basic auth", cfg: prometheus.Config{URL: "http://p", BearerTokenFile: token, BasicAuthUser: "u"},
			wantErr: "prometheus auth: a bearer token or basic auth, not both"},
		{name: "password without user", cfg: prometheus.Config{URL: "http://p", BasicAuthPasswordFile: token},
			wantErr: "prometheus basic auth: a password file needs a user"},
		{name: "missing token file", cfg: prometheus.Config{URL: "http://p", BearerTokenFile: "/nonexistent/token"},
			wantErr: "prometheus bearer token: read /nonexistent/token: no such file or directory"},
		{name: "empty token file", cfg: prometheus.Config{URL: "http://p", BearerTokenFile: empty},
			wantErr: "prometheus bearer token: " + empty + " is empty"},
		{name: "empty token env", cfg: prometheus.Config{URL: "http://p", BearerTokenEnv: "TEST_PROM_EMPTY"},
			wantErr: "prometheus bearer token: environment variable TEST_PROM_EMPTY is empty or unset"},
		{name: "Authorization as a header", cfg: prometheus.Config{URL: "http://p", Headers: http.Header{"authorization": {"Bearer s3cret"}}},
			wantErr: "prometheus headers: give Authorization through a token or password file, not as a header"},
		{name: "a certificate without its key", cfg: prometheus.Config{URL: "http://p", CertFile: token},
			wantErr: "prometheus client certificate: give both the certificate and the key file"},
		{name: "a key that is no key", cfg: prometheus.Config{URL: "http://p", CertFile: token, KeyFile: token},
			wantErr: "prometheus client certificate " + token + " and key " + token + ": cannot be loaded as a pair"},
		{name: "a CA file without certificates", cfg: prometheus.Config{URL: "http://p", CAFile: token},
			wantErr: "prometheus CA file " + token + ": no PEM certificate in it"},
		// Certificates and keys are read whole: a device, a FIFO or a huge
		// file is refused at once, not read until memory runs out.
		{name: "a CA file that is a device", cfg: prometheus.Config{URL: "http://p", CAFile: "/dev/zero"},
			wantErr: "prometheus CA file: read /dev/zero: not a regular file"},
		{name: "a certificate file that is a device", cfg: prometheus.Config{URL: "http://p", CertFile: "/dev/zero", KeyFile: token},
			wantErr: "prometheus client certificate: read /dev/zero: not a regular file"},
		{name: "a key file that is a device", cfg: prometheus.Config{URL: "http://p", CertFile: token, KeyFile: "/dev/zero"},
			wantErr: "prometheus client key: read /dev/zero: not a regular file"},
		{name: "a huge CA file", cfg: prometheus.Config{URL: "http://p", CAFile: huge},
			wantErr: "prometheus CA file: read " + huge + ": too large: more than 1 MiB"},
		{name: "a matcher that is no label", cfg: prometheus.Config{URL: "http://p", Matcher: &prometheus.LabelMatcher{Name: "0x", Value: "v"}},
			wantErr: `label matcher: "0x" is not a label name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := prometheus.New(tt.cfg)
			require.EqualError(t, err, tt.wantErr)
			require.NotContains(t, err.Error(), "s3cret")
		})
	}
}

// A client certificate the server requires is presented.
func TestPrometheusClientCertificate(t *testing.T) {
	srv := testenv.StartPrometheus(t, filepath.Join("..", "testdata", "cluster.om"))
	if srv == nil {
		return
	}
	front := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(mustURL(t, srv.URL)))
	front.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	front.Config.ErrorLog = quiet()
	front.StartTLS()
	t.Cleanup(front.Close)
	ca := writeFile(t, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw})))

	_, err := newPrometheus(t, front.URL, func(c *prometheus.Config) { c.CAFile = ca }).Usage(context.Background(), clusterQuery())
	require.ErrorIs(t, err, prometheus.ErrUnavailable, "no client certificate")

	certPEM, keyPEM := testCertificate(t)
	cert, key := writeFile(t, "cert.pem", certPEM), writeFile(t, "key.pem", keyPEM)
	res, err := newPrometheus(t, front.URL, func(c *prometheus.Config) {
		c.CAFile, c.CertFile, c.KeyFile = ca, cert, key
	}).Usage(context.Background(), clusterQuery())
	require.NoError(t, err)
	require.NotEmpty(t, res.Workloads)
}

// testCertificate returns a fresh self-signed certificate and its key, in
// PEM.
func testCertificate(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "recommender"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// TestPrometheusCredentialsStayWithTheServer: a redirect to another
// origin gets neither the token nor the configured headers.
func TestPrometheusCredentialsStayWithTheServer(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		for _, h := range []string{"Authorization", "X-Api-Key"} {
			if v := r.Header.Get(h); v != "" {
				leaked = append(leaked, h+": "+v)
			}
		}
		http.Error(w, "no", http.StatusBadGateway)
	}))
	defer other.Close()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer front.Close()
	t.Setenv("PROM_TOKEN", "s3cr3t-token")
	prom := newPrometheus(t, front.URL, func(c *prometheus.Config) {
		c.BearerTokenEnv = "PROM_TOKEN"
		c.Headers = http.Header{"X-Api-Key": {"k3y"}}
	})
	_, err := prom.Usage(context.Background(), clusterQuery())
	require.Error(t, err, "the other server answers 502")
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, leaked)
}

// TestPrometheusRedirectBounded: an answer from another origin, reached
// by a redirect, is bounded as the server's own answers are. It once came
// back unbounded: an endless body there was read until memory ran out.
func TestPrometheusRedirectBounded(t *testing.T) {
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if _, err := io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[`); err != nil {
			return
		}
		for range 1 << 10 { // 1 GiB of JSON whitespace
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(other.Close)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(front.Close)
	prom := newPrometheus(t, front.URL)
	prometheus.SetBodyBounds(prom, 4<<20, 6<<20)
	_, err := prom.Usage(context.Background(), clusterQuery())
	require.ErrorIs(t, err, prometheus.ErrUnavailable)
	require.Contains(t, err.Error(), "answer too long")
	require.EqualValues(t, 6<<20, prometheus.InFlightLeft(prom), "every answer gave back what it took")
}

// TestReadSecret: a token or password file is read within bounds: a
// device such as /dev/zero, or a file longer than any token, is refused
// without being read whole, naming the file and never its content.
func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	ok := writeFile(t, "token", "  s3cret-token\n")
	long := filepath.Join(dir, "long")
	require.NoError(t, os.WriteFile(long, bytes.Repeat([]byte("a"), 100<<10), 0o600))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte(" \n"), 0o600))

	got, err := prometheus.ReadSecret(ok)
	require.NoError(t, err)
	require.Equal(t, "s3cret-token", got)
	for path, want := range map[string]string{
		"/dev/zero":              "read /dev/zero: not a regular file",
		long:                     "read " + long + ": more than 64 KiB, not a token or password",
		empty:                    empty + " is empty",
		filepath.Join(dir, "no"): "read " + filepath.Join(dir, "no") + ": no such file or directory",
	} {
		_, err := prometheus.ReadSecret(path)
		require.EqualError(t, err, want)
	}
}
