package notify_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/notify"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/summary"
)

// chat is a webhook receiver on 127.0.0.1 that answers with the statuses
// given, one per request, then 200, and keeps what it was sent.
type chat struct {
	mu       sync.Mutex
	statuses []int
	bodies   []string
	types    []string
}

func (c *chat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bodies = append(c.bodies, string(b))
	c.types = append(c.types, r.Header.Get("Content-Type"))
	status := http.StatusOK
	if len(c.statuses) > 0 {
		status, c.statuses = c.statuses[0], c.statuses[1:]
	}
	w.WriteHeader(status)
	io.WriteString(w, "invalid_payload\n")
}

func TestWebhookSend(t *testing.T) {
	s := summary.New(summary.Run{Outcome: summary.ChangesProposed, Duration: 1500 * time.Millisecond,
		Report: &publish.Report{Results: []publish.Result{{Key: "inference/Deployment/chat<b>&", Outcome: publish.Opened, Number: 3,
			URL: "https://github.com/acme/gitops/pull/3"}}}})
	const text = `{"text":"GPU rightsizing run changes proposed: pull requests 1 opened; 0 upsize, 0 scaleBack, 0 none, 0 skipped; took 1.5s\n` +
		`- opened inference/Deployment/chat&lt;b&gt;&amp; https://github.com/acme/gitops/pull/3"}`
	tests := []struct {
		name     string
		statuses []int
		attempts int
		err      string
	}{
		{name: "taken at once", attempts: 1},
		{name: "a 5xx and a 429 are tried again", statuses: []int{502, 429}, attempts: 3},
		{name: "tries are bounded", statuses: []int{503, 503, 503, 503}, attempts: 3, err: "webhook: 503 Service Unavailable: invalid_payload (after 3 attempt(s))"},
		{name: "a 4xx is final", statuses: []int{400}, attempts: 1, err: "webhook: 400 Bad Request: invalid_payload (after 1 attempt(s))"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &chat{statuses: tt.statuses}
			srv := httptest.NewServer(c)
			defer srv.Close()
			url := srv.URL + "/services/T000/B000/secret-part"
			err := notify.Webhook{URL: url, Client: srv.Client(), Backoff: time.Millisecond}.Send(t.Context(), notify.NewMessage(s))
			if tt.err == "" {
				require.NoError(t, err)
			} else {
				require.EqualError(t, err, tt.err)
				require.ErrorIs(t, err, notify.ErrWebhook)
			}
			require.Len(t, c.bodies, tt.attempts)
			for i := range c.bodies {
				require.JSONEq(t, text, c.bodies[i])
				require.Equal(t, "application/json", c.types[i])
			}
		})
	}
	t.Run("no URL in an error", func(t *testing.T) {
		srv := httptest.NewServer(&chat{})
		url := srv.URL + "/services/T000/B000/secret-part"
		srv.Close()
		err := notify.Webhook{URL: url, Attempts: 2, Backoff: time.Millisecond}.Send(t.Context(), notify.NewMessage(s))
		require.ErrorContains(t, err, "connection refused")
		require.ErrorContains(t, err, "(after 2 attempt(s))")
		require.NotContains(t, err.Error(), "secret-part")
	})
	t.Run("a redirect is not followed", func(t *testing.T) {
		// Following it sent the message to the other server, with the
		// secret URL as the Referer.
		other := &chat{}
		elsewhere := httptest.NewServer(other)
		defer elsewhere.Close()
		srv := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/collect", http.StatusTemporaryRedirect))
		defer srv.Close()
		err := notify.Webhook{URL: srv.URL + "/services/T000/B000/secret-part", Client: srv.Client(), Backoff: time.Millisecond}.Send(t.Context(), notify.NewMessage(s))
		require.ErrorContains(t, err, "webhook: 307 Temporary Redirect")
		require.NotContains(t, err.Error(), "secret-part")
		require.Empty(t, other.bodies, "nothing reached where the redirect pointed")
	})
	t.Run("an answer that echoes the URL is not logged as is", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "no_service: "+r.URL.String()+" "+r.URL.EscapedPath()+" token=S3cretTok3n")
		}))
		defer srv.Close()
		err := notify.Webhook{URL: srv.URL + "/services/T000/B000/secret-part?token=S3cretTok3n", Client: srv.Client()}.Send(t.Context(), notify.NewMessage(s))
		require.ErrorContains(t, err, "webhook: 404 Not Found: no_service: [redacted]")
		for _, secret := range []string{"secret-part", "S3cretTok3n", "/services/T000"} {
			require.NotContains(t, err.Error(), secret)
		}
	})
}
