package testenv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// FaultProxy is a reverse proxy on 127.0.0.1 in front of a real server that
// answers as an unhealthy server or network would, when told to, and counts
// what passes through.
type FaultProxy struct {
	// URL is the proxy's base URL, http://127.0.0.1:PORT, to use in place of
	// the target's.
	URL string

	target    *url.URL
	transport *http.Transport
	// closing ends the waits of Slow faults, so that the server can close.
	closing chan struct{}

	mu        sync.Mutex
	fault     Fault
	remaining int // requests the fault still applies to, when fault.times > 0
	requests  int
	byPath    map[string]int
	bytesOut  int64
}

// Fault is what the proxy does to the requests it receives. The zero Fault
// forwards them untouched; Set(Fault{}) clears a fault.
type Fault struct {
	kind       faultKind
	delay      time.Duration
	status     int
	body       string
	retryAfter time.Duration
	warnings   []string
	truncate   int
	samples    func([][2]any) [][2]any
	times      int
}

type faultKind int

const (
	noFault faultKind = iota
	downFault
	slowFault
	statusFault
	rateLimitedFault
	warningsFault
	truncateFault
	samplesFault
)

// Down closes the connection without answering. A Go client may retry an
// idempotent request (GET) on a reused connection by itself, which shows as
// more requests.
func Down() Fault { return Fault{kind: downFault} }

// Slow waits d before forwarding, or until the client gives up.
func Slow(d time.Duration) Fault { return Fault{kind: slowFault, delay: d} }

// Status answers with code and body without forwarding. A body that is JSON
// (see ErrorBody) is sent as application/json, any other as text/plain.
func Status(code int, body string) Fault { return Fault{kind: statusFault, status: code, body: body} }

// RateLimited answers 429 Too Many Requests with a Retry-After header of
// retryAfter in whole seconds (rounded up) and a plain-text body, as a
// rate-limiting gateway in front of Prometheus would.
func RateLimited(retryAfter time.Duration) Fault {
	return Fault{kind: rateLimitedFault, retryAfter: retryAfter}
}

// Warnings forwards and adds warnings to the "warnings" field of the JSON
// answer, after any the server gave. An answer that is not a JSON object is
// passed on untouched.
func Warnings(warnings ...string) Fault { return Fault{kind: warningsFault, warnings: warnings} }

// Truncate forwards and cuts the answer's body after n bytes, dropping its
// Content-Length, so that the client reads a complete HTTP response holding
// broken JSON.
func Truncate(n int) Fault { return Fault{kind: truncateFault, truncate: n} }

// ReverseSamples answers every series of a range query with its samples
// in descending time order, as a broken server or proxy could.
func ReverseSamples() Fault {
	return Fault{kind: samplesFault, body: "reversed samples", samples: func(v [][2]any) [][2]any {
		slices.Reverse(v)
		return v
	}}
}

// RepeatSample answers every series of a range query with its last sample
// twice: the second time at the same timestamp with another value.
func RepeatSample() Fault {
	return Fault{kind: samplesFault, body: "a sample repeated with another value", samples: func(v [][2]any) [][2]any {
		if len(v) == 0 {
			return v
		}
		last := v[len(v)-1]
		return append(v, [2]any{last[0], "1e6"})
	}}
}

// Times limits the fault to the next k requests, after which the proxy
// forwards untouched again, as a server that recovers would; k <= 0 means
// every request, the default.
func (f Fault) Times(k int) Fault {
	f.times = max(k, 0)
	return f
}

// String describes the fault, for test names and messages.
func (f Fault) String() string {
	var s string
	switch f.kind {
	case noFault:
		return "no fault"
	case downFault:
		s = "down"
	case slowFault:
		s = fmt.Sprintf("slow %v", f.delay)
	case statusFault:
		s = fmt.Sprintf("status %d", f.status)
	case rateLimitedFault:
		s = fmt.Sprintf("rate limited, retry after %v", f.retryAfter)
	case warningsFault:
		s = fmt.Sprintf("warnings %q", f.warnings)
	case truncateFault:
		s = fmt.Sprintf("truncated after %d bytes", f.truncate)
	case samplesFault:
		s = f.body
	}
	if f.times > 0 {
		s += fmt.Sprintf(" for %d requests", f.times)
	}
	return s
}

// ErrorBody returns the JSON body of a failed Prometheus API call, e.g.
// ErrorBody("internal", "...") for a 500 or ErrorBody("timeout", "...") for
// a 503, for use with Status.
func ErrorBody(errorType, msg string) string {
	b, err := json.Marshal(struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
	}{"error", errorType, msg})
	if err != nil {
		panic(err) // strings always marshal
	}
	return string(b)
}

// NewFaultProxy starts a proxy in front of target, a base URL such as
// Prometheus.URL, and closes it when the test ends.
func NewFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || u.Host == "" {
		t.Fatalf("fault proxy target %q is not a base URL: %v", target, err)
		return nil
	}
	transport, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		t.Fatalf("http.DefaultTransport is a %T, not an *http.Transport", http.DefaultTransport)
		return nil
	}
	p := &FaultProxy{
		target:    u,
		transport: transport.Clone(),
		closing:   make(chan struct{}),
		byPath:    map[string]int{},
	}
	srv := httptest.NewServer(p)
	p.URL = srv.URL
	t.Cleanup(func() {
		close(p.closing)
		srv.Close()
		p.transport.CloseIdleConnections()
	})
	return p
}

// Set makes f apply to the requests that follow, replacing any fault before.
func (p *FaultProxy) Set(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
	p.remaining = f.times
}

// Requests returns how many requests the proxy has received, whatever it did
// with them.
func (p *FaultProxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests
}

// RequestsTo returns how many requests the proxy has received for path,
// e.g. "/api/v1/query".
func (p *FaultProxy) RequestsTo(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byPath[path]
}

// BytesOut returns how many bytes of response bodies the proxy has sent back
// to clients.
func (p *FaultProxy) BytesOut() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytesOut
}

// take counts a request and returns the fault that applies to it.
func (p *FaultProxy) take(r *http.Request) Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests++
	p.byPath[r.URL.Path]++
	f := p.fault
	if f.times > 0 {
		p.remaining--
		if p.remaining <= 0 {
			p.fault = Fault{}
		}
	}
	return f
}

func (p *FaultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := p.take(r)
	if f.kind == downFault {
		hijackAndClose(w)
		return
	}
	cw := &countingWriter{ResponseWriter: w, p: p}
	switch f.kind {
	case slowFault:
		wait := time.NewTimer(f.delay)
		defer wait.Stop()
		select {
		case <-wait.C:
		case <-r.Context().Done():
			return // the client has gone
		case <-p.closing:
			http.Error(cw, "fault proxy closing", http.StatusServiceUnavailable)
			return
		}
	case statusFault:
		if json.Valid([]byte(f.body)) {
			cw.Header().Set("Content-Type", "application/json")
		} else {
			cw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		cw.WriteHeader(f.status)
		io.WriteString(cw, f.body)
		return
	case rateLimitedFault:
		cw.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(f.retryAfter.Seconds()))))
		http.Error(cw, "429 too many requests", http.StatusTooManyRequests)
		return
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(p.target)
			// The proxy rewrites bodies, so it asks for them uncompressed;
			// its transport still gzips the hop to the server.
			pr.Out.Header.Del("Accept-Encoding")
		},
		Transport: p.transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client has gone; there is no one to answer
			}
			http.Error(w, fmt.Sprintf("fault proxy: forwarding to %s: %v", p.target, err), http.StatusBadGateway)
		},
	}
	switch f.kind {
	case warningsFault:
		rp.ModifyResponse = func(resp *http.Response) error { return addWarnings(resp, f.warnings) }
	case samplesFault:
		rp.ModifyResponse = func(resp *http.Response) error { return rewriteSamples(resp, f.samples) }
	case truncateFault:
		rp.ModifyResponse = func(resp *http.Response) error {
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.LimitReader(resp.Body, int64(f.truncate)), resp.Body}
			resp.ContentLength = -1
			resp.Header.Del("Content-Length")
			return nil
		}
	}
	rp.ServeHTTP(cw, r)
}

// hijackAndClose drops the connection under w without a word.
func hijackAndClose(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Only HTTP/1 connections can be taken over; this server speaks
		// nothing else, so this is a bug in the proxy.
		panic(fmt.Sprintf("fault proxy: taking over the connection: %v", err))
	}
	conn.Close()
}

// addWarnings adds warnings to the JSON object in resp's body.
func addWarnings(resp *http.Response, warnings []string) error {
	return rewriteBody(resp, "add warnings to", func(body []byte) ([]byte, error) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(body, &obj) != nil {
			return body, nil
		}
		var all []string
		if old, ok := obj["warnings"]; ok {
			if err := json.Unmarshal(old, &all); err != nil {
				return nil, fmt.Errorf("decoding the server's warnings: %w", err)
			}
		}
		var err error
		if obj["warnings"], err = json.Marshal(append(all, warnings...)); err != nil {
			return nil, err
		}
		return json.Marshal(obj)
	})
}

// rewriteSamples passes the samples of every series of a matrix answer
// through f.
func rewriteSamples(resp *http.Response, f func([][2]any) [][2]any) error {
	return rewriteBody(resp, "rewrite the samples of", func(body []byte) ([]byte, error) {
		var obj struct {
			Status string `json:"status"`
			Data   struct {
				ResultType string `json:"resultType"`
				Result     []struct {
					Metric map[string]string `json:"metric"`
					Values [][2]any          `json:"values"`
				} `json:"result"`
			} `json:"data"`
			Warnings []string `json:"warnings,omitempty"`
		}
		if json.Unmarshal(body, &obj) != nil || obj.Data.ResultType != "matrix" {
			return body, nil
		}
		for i := range obj.Data.Result {
			obj.Data.Result[i].Values = f(obj.Data.Result[i].Values)
		}
		return json.Marshal(obj)
	})
}

// rewriteBody replaces resp's body with what f makes of it; what names
// the rewrite in errors.
func rewriteBody(resp *http.Response, what string, f func([]byte) ([]byte, error)) error {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("reading the answer to %s it: %w", what, err)
	}
	out, err := f(body)
	if err != nil {
		return fmt.Errorf("%s the answer: %w", what, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}

// countingWriter counts the body bytes sent back through the proxy.
type countingWriter struct {
	http.ResponseWriter
	p *FaultProxy
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.p.mu.Lock()
	w.p.bytesOut += int64(n)
	w.p.mu.Unlock()
	return n, err
}

// Unwrap lets http.ResponseController, which the reverse proxy flushes
// through, reach the connection's writer.
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
