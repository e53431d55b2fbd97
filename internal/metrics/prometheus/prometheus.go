package prometheus

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/gpu-rightsizing/recommender/internal/localfile"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// ErrUnavailable marks a Prometheus that did not answer usably, after
// retries: down, too slow, failing, or sending what cannot be read. The
// workloads of the query are left as they are.
var ErrUnavailable = errors.New("prometheus unavailable")

// Config says how to reach a server with Prometheus' HTTP API:
// Prometheus, Thanos, Mimir, VictoriaMetrics. Secrets are read from files
// or the environment, never passed as values, so that they do not show in
// a process list or a shell history.
type Config struct {
	// URL is the server's base URL, with any path prefix (Mimir serves the
	// API under /prometheus). It may not carry a password.
	URL string
	// BearerTokenFile or BearerTokenEnv (the name of an environment
	// variable) hold a bearer token; at most one may be set.
	BearerTokenFile string
	BearerTokenEnv  string
	// BasicAuthUser and BasicAuthPasswordFile are for basic auth.
	BasicAuthUser         string
	BasicAuthPasswordFile string
	// Headers are sent with every request, e.g. X-Scope-OrgID for Mimir.
	Headers http.Header
	// CAFile verifies the server; CertFile and KeyFile authenticate the
	// client.
	CAFile, CertFile, KeyFile string
	// InsecureSkipVerify turns off the verification of the server's
	// certificate. It is logged as a warning.
	InsecureSkipVerify bool
	// Timeout bounds each request (default 2m). A query makes a few
	// tries, each bounded so.
	Timeout time.Duration
	// Matcher, when set, is added to every selector, e.g. cluster="prod-eu"
	// when several clusters write into one store.
	Matcher *LabelMatcher
	// Concurrency is how many selectors are read at once (default 4),
	// each piece after piece with the next piece asked for while one is
	// read: at most that many answers are read at once.
	Concurrency int
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
}

// LabelMatcher is an equality matcher, name="value".
type LabelMatcher struct {
	Name, Value string
}

func (m LabelMatcher) String() string { return m.Name + "=" + quote(m.Value) }

// Defaults of a Config.
const (
	DefaultTimeout     = 2 * time.Minute
	defaultConcurrency = 4
)

// Limits of one query. They bound what a failing or hostile server can
// cost a run: in tries, waits and memory.
const (
	// maxTries counts the tries of one request.
	maxTries = 3
	// firstBackoff is the wait before the second try; it doubles.
	firstBackoff = 250 * time.Millisecond
	// maxRetryAfter caps the wait a 429 or 503 may ask for: a server that
	// wants more is treated as down.
	maxRetryAfter = 30 * time.Second
	// maxResponseBytes caps one response body, decompressed: the
	// requests are sized from the answers before to fill three quarters
	// of it (pieceShare), and a longer answer is asked for again over
	// half the range (down to minChunk), so a large fleet costs more
	// requests, not more memory. It bounds the body rather than the
	// samples decoded from it, though the body is not held: a body of
	// samples decodes to fewer bytes (16 a sample, from 17 or more of
	// JSON), so it bounds those too, and one of anything else (a gzip
	// bomb of spaces) still costs its decompression.
	maxResponseBytes = 128 << 20
	// maxInFlightBytes caps the bodies being read at once, all requests
	// of the source together (they run Concurrency at a time), so that
	// answers that expand (gzip) cannot add up past the job's memory.
	maxInFlightBytes = 256 << 20
)

// firstPiece is the range of the first request for a selector, the
// oldest of its range: its answer sizes the next ones (readSelector). It
// is short, so that no answer crosses the bounds on the first try: at
// 30 s, 10,000 pods' four series take about 30 MB over it (the first
// piece was 4 hours, whose answer was given up and asked for again in
// halves past about 6,000 pods). A lookback of whole days costs no more
// requests for it; the phases' 15 minutes stay one request.
const firstPiece = 15 * time.Minute

// pieceShare is the share of the bounds on an answer (each one's, and
// its share of those being read at once) that a request is sized to
// fill: room for the fleet to grow along the range.
const pieceShare = 0.75

// chunk is the longest time range one request reads. A request returns
// every raw sample in its range, so its size grows with the range; a day
// keeps responses moderate, and at a 15 s scrape interval (5,760 samples a
// series) stays within the 11,000 points a series that Prometheus allows a
// range query — the bound other tools are sized for. A 7-day lookback is 8
// requests a selector (the first 15 minutes, then days) while its answers
// fit the bounds, whatever the number of workloads; more for a fleet whose
// answers need more.
const chunk = 24 * time.Hour

// minChunk is the shortest range a request is split to when the server
// refuses to load its samples (--query.max-samples).
const minChunk = 10 * time.Minute

// Source is a usage source backed by a server with Prometheus' HTTP
// API. A query reads the raw samples of its metrics and of the
// kube-state-metrics series of its namespaces, in a few requests whatever
// the number of workloads, and answers from them with the same code as a
// recording.
//
// A Source is safe for concurrent use.
type Source struct {
	// client sends the queries to endpoint, the server's query API.
	client      *http.Client
	endpoint    string
	transport   *authTransport
	name        string
	matcher     *LabelMatcher
	timeout     time.Duration
	concurrency int
	log         *slog.Logger
}

var _ interface {
	Usage(context.Context, usage.Query) (usage.Result, error)
} = (*Source)(nil)

var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// New checks cfg, reads its secrets and certificates, and
// returns a source for the server. It sends no request.
func New(cfg Config) (*Source, error) {
	u, err := parseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	u.User = nil
	name := "Prometheus at " + u.String()
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if m := cfg.Matcher; m != nil && !labelNameRE.MatchString(m.Name) {
		return nil, fmt.Errorf("label matcher: %q is not a label name", m.Name)
	}

	auth := &authTransport{headers: cfg.Headers.Clone(), maxBody: maxResponseBytes, inFlight: &bodyBudget{left: maxInFlightBytes}, inFlightMax: maxInFlightBytes}
	for h := range auth.headers {
		if http.CanonicalHeaderKey(h) == "Authorization" {
			return nil, errors.New("prometheus headers: give Authorization through a token or password file, not as a header")
		}
	}
	switch {
	case cfg.BearerTokenFile != "" && cfg.BearerTokenEnv != "":
		return nil, errors.New("prometheus bearer token: from a file or from the environment, not both")
	case (cfg.BearerTokenFile != "" || cfg.BearerTokenEnv != "") && cfg.BasicAuthUser != "":
		return nil, errors.New("prometheus auth: a bearer token or basic auth, not both")
	case cfg.BasicAuthPasswordFile != "" && cfg.BasicAuthUser == "":
		return nil, errors.New("prometheus basic auth: a password file needs a user")
	case cfg.BearerTokenFile != "":
		tok, err := ReadSecret(cfg.BearerTokenFile)
		if err != nil {
			return nil, fmt.Errorf("prometheus bearer token: %w", err)
		}
		auth.bearer = tok
	case cfg.BearerTokenEnv != "":
		tok := strings.TrimSpace(os.Getenv(cfg.BearerTokenEnv))
		if tok == "" {
			return nil, fmt.Errorf("prometheus bearer token: environment variable %s is empty or unset", cfg.BearerTokenEnv)
		}
		auth.bearer = tok
	case cfg.BasicAuthUser != "":
		auth.user = cfg.BasicAuthUser
		if cfg.BasicAuthPasswordFile != "" {
			pw, err := ReadSecret(cfg.BasicAuthPasswordFile)
			if err != nil {
				return nil, fmt.Errorf("prometheus basic auth password: %w", err)
			}
			auth.password = pw
		}
	}

	tlsCfg, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.InsecureSkipVerify {
		log.Warn("not verifying the certificate of the Prometheus server: anyone on the path can read and change usage data", "server", u.String())
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	auth.next = tr
	auth.scheme, auth.host = u.Scheme, u.Host
	endpoint := *u
	endpoint.Path = path.Join(u.Path, "/api/v1/query")
	p := &Source{
		client:      &http.Client{Transport: auth},
		endpoint:    endpoint.String(),
		transport:   auth,
		name:        name,
		matcher:     cfg.Matcher,
		timeout:     cfg.Timeout,
		concurrency: cfg.Concurrency,
		log:         log,
	}
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	if p.concurrency <= 0 {
		p.concurrency = defaultConcurrency
	}
	return p, nil
}

// String names the server, without credentials.
func (p *Source) String() string { return p.name }

// CheckURL says what is wrong with a server's base URL, nil when it is
// one New accepts: the check of `config validate` and of the
// flags, so that a URL the run would refuse is a usage mistake.
func CheckURL(raw string) error {
	_, err := parseURL(raw)
	return err
}

func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// The parse error quotes the URL, which may hold a password.
		return nil, errors.New("prometheus URL: not a valid URL")
	}
	// Messages name the URL without what may be a credential: user
	// information, query and fragment.
	shown := (&url.URL{Scheme: u.Scheme, Opaque: u.Opaque, Host: u.Host, Path: u.Path}).String()
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("prometheus URL %s: want http:// or https:// and a host", shown)
	}
	if _, ok := u.User.Password(); ok {
		return nil, fmt.Errorf("prometheus URL %s: carries a password; give it in a password file instead", shown)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("prometheus URL %s: a base URL takes no query or fragment", shown)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("prometheus URL %s: port %q is not a port", shown, p)
		}
	}
	return u, nil
}

// ReadSecret reads a token or password file, trimmed: a regular file (a
// Kubernetes secret's mounted link leads to one) of at most 64 KiB,
// opened without blocking. The error names the file, never its content.
// Every secret the tool reads from a file goes through it
// (localfile.ReadSecret).
func ReadSecret(path string) (string, error) { return localfile.ReadSecret(path) }

func tlsConfig(cfg Config) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // opt-in, and logged
	if cfg.CAFile != "" {
		pem, err := localfile.Read(cfg.CAFile, localfile.MaxKey)
		if err != nil {
			return nil, fmt.Errorf("prometheus CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("prometheus CA file %s: no PEM certificate in it", cfg.CAFile)
		}
		c.RootCAs = pool
	}
	switch {
	case cfg.CertFile != "" && cfg.KeyFile != "":
		certPEM, err := localfile.Read(cfg.CertFile, localfile.MaxKey)
		if err != nil {
			return nil, fmt.Errorf("prometheus client certificate: %w", err)
		}
		keyPEM, err := localfile.Read(cfg.KeyFile, localfile.MaxKey)
		if err != nil {
			return nil, fmt.Errorf("prometheus client key: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			// The error of a bad key could quote it: name the files only.
			return nil, fmt.Errorf("prometheus client certificate %s and key %s: cannot be loaded as a pair", cfg.CertFile, cfg.KeyFile)
		}
		c.Certificates = []tls.Certificate{cert}
	case cfg.CertFile != "" || cfg.KeyFile != "":
		return nil, errors.New("prometheus client certificate: give both the certificate and the key file")
	}
	return c, nil
}

// authTransport adds credentials and headers to every request, notes the
// status and Retry-After of each response where the request's context
// asks for them, and bounds the size of response bodies.
type authTransport struct {
	next     http.RoundTripper
	maxBody  int64
	inFlight *bodyBudget
	// inFlightMax is what inFlight holds when no answer is being read.
	inFlightMax int64
	// scheme and host are the configured server's: credentials and
	// headers go there only, never to where a redirect points.
	scheme, host   string
	headers        http.Header
	bearer         string
	user, password string
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	// A request followed from a redirect to another origin (or from
	// https to http) takes nothing secret with it. Its answer is noted
	// and bounded all the same: it is the answer the client reads.
	gz := false
	if req.URL.Scheme == t.scheme && req.URL.Host == t.host {
		for k, vs := range t.headers {
			req.Header[http.CanonicalHeaderKey(k)] = slices.Clone(vs)
		}
		switch {
		case t.bearer != "":
			req.Header.Set("Authorization", "Bearer "+t.bearer)
		case t.user != "":
			req.SetBasicAuth(t.user, t.password)
		}
		// The answer is asked for gzipped and inflated here rather than
		// by net/http, whose compress/gzip took a quarter of the
		// client's CPU at 10,000 pods; the bounds below count the
		// inflated bytes as before. A request that names its own
		// encoding is left to it, as net/http leaves it.
		gz = req.Header.Get("Accept-Encoding") == "" && req.Header.Get("Range") == ""
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if n, ok := req.Context().Value(noteKey{}).(*responseNote); ok {
		n.status = resp.StatusCode
		n.retryAfter = resp.Header.Get("Retry-After")
	}
	if gz && strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") && resp.Body != http.NoBody {
		resp.Body = &gzipBody{body: resp.Body}
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Uncompressed = true
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.maxBody, budget: t.inFlight}
	return resp, nil
}

// gzipBody inflates a gzipped body. Its reader is made at the first
// read, as net/http's is, so that a bad header is an error of reading
// the body, retried like a body cut short.
type gzipBody struct {
	body io.ReadCloser
	zr   *gzip.Reader
	err  error
}

func (g *gzipBody) Read(p []byte) (int, error) {
	if g.zr == nil && g.err == nil {
		g.zr, g.err = gzip.NewReader(g.body)
	}
	if g.err != nil {
		return 0, g.err
	}
	return g.zr.Read(p)
}

// Close closes the body, which ends a read waiting on it: it may be
// called while another goroutine reads (limitedBody).
func (g *gzipBody) Close() error { return g.body.Close() }

// noteKey carries a *responseNote in a request's context: v1.API returns
// no status code and no headers, and retries need both.
type noteKey struct{}

type responseNote struct {
	status     int
	retryAfter string
}

// errBodyTooLong is an answer longer than maxResponseBytes, or one that
// would take the answers being read past maxInFlightBytes: the range is
// asked for again in halves.
var errBodyTooLong = errors.New("answer too long")

// limitedBody fails a body longer than left bytes, or one that finds the
// shared budget spent, instead of reading it all into memory. The bytes
// it took from the budget go back when it is closed: the client has then
// read and decoded it. The client may close it while another goroutine
// reads it (a cancelled request): the accounting is under mu, the read
// itself is not, so that closing still ends a read that waits.
type limitedBody struct {
	rc     io.ReadCloser
	budget *bodyBudget

	mu     sync.Mutex
	left   int64
	taken  int64
	closed bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	left := b.left
	b.mu.Unlock()
	if left <= 0 {
		return 0, fmt.Errorf("%w: more than %d MiB", errBodyTooLong, maxResponseBytes>>20)
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.rc.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left -= int64(n)
	if n > 0 && !b.closed {
		if !b.budget.take(int64(n)) {
			return 0, fmt.Errorf("%w: the answers being read at once hold more than %d MiB", errBodyTooLong, maxInFlightBytes>>20)
		}
		b.taken += int64(n)
	}
	return n, err
}

func (b *limitedBody) Close() error {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		b.budget.give(b.taken)
		b.taken = 0
	}
	b.mu.Unlock()
	return b.rc.Close()
}

// bodyBudget is the bytes the answers being read may still take.
type bodyBudget struct {
	mu   sync.Mutex
	left int64
}

func (b *bodyBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.left {
		return false
	}
	b.left -= n
	return true
}

func (b *bodyBudget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left += n
}
