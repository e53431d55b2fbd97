package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/summary"
)

// Webhook posts a run's summary to a chat's incoming webhook. Its URL is
// a secret (whoever holds it may post to the channel): it never appears
// in an error, nor in what the chat answered, and goes nowhere a redirect
// points.
type Webhook struct {
	URL    string
	Client *http.Client
	// Attempts bounds the tries of one message (3 when 0); Backoff is the
	// wait before the second, doubled before each next (1s when 0).
	Attempts int
	Backoff  time.Duration
}

// maxLines bounds the pull requests and the problems a message lists
// each; the rest are counted.
const maxLines = 20

// Message is the webhook's JSON: Slack's `text`, the field every
// Slack-compatible webhook reads.
type Message struct {
	Text string `json:"text"`
}

// NewMessage renders the summary as a chat message: the headline, then
// the pull requests that moved and the problems, escaped as Slack asks
// (&, < and > are its markup).
func NewMessage(s summary.Summary) Message {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	return Message{Text: esc.Replace(strings.Join(s.Lines(maxLines), "\n"))}
}

// ErrWebhook marks a message the webhook did not take.
var ErrWebhook = errors.New("webhook")

// Send posts m, trying again after a network error, a 429 or a 5xx, at
// most Attempts times in all; another answer than 2xx is final.
func (w Webhook) Send(ctx context.Context, m Message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 10 * time.Second}
	if w.Client != nil {
		c := *w.Client
		client = &c
	}
	// A redirect is an answer, not followed: following it would send the
	// message elsewhere, and the secret URL with it as Referer.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	attempts, wait := w.Attempts, w.Backoff
	if attempts <= 0 {
		attempts = 3
	}
	if wait <= 0 {
		wait = time.Second
	}
	for i := 1; ; i++ {
		retry, err := w.post(ctx, client, body)
		if err == nil {
			return nil
		}
		if !retry || i == attempts {
			return fmt.Errorf("%w: %w (after %d attempt(s))", ErrWebhook, err, i)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrWebhook, ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// post makes one attempt; retry says whether another may succeed.
func (w Webhook) post(ctx context.Context, client *http.Client, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		// The parse error quotes the URL.
		return false, errors.New("the URL is not valid")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			// Its message quotes the URL: keep only the cause.
			err = ue.Err
		}
		return ctx.Err() == nil, err
	}
	defer resp.Body.Close()
	// A chat answers a line ("ok", "invalid_payload"); more is not read.
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	err = fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(printable(redact(string(answer), w.URL))))
	return resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500, err
}

// redact takes out of an answer what could be the URL's secret: the URL,
// its path and query, escaped or not, and each part of them long enough
// to be a token (Slack's is the path's last part).
func redact(answer, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "[an answer, left out]"
	}
	secrets := []string{raw, u.Path, u.EscapedPath(), u.RawQuery}
	for _, part := range strings.FieldsFunc(u.Path+"/"+u.RawQuery, func(r rune) bool { return strings.ContainsRune("/?&=", r) }) {
		if len(part) >= 6 {
			secrets = append(secrets, part, url.PathEscape(part), url.QueryEscape(part))
		}
	}
	// Longest first, so that a part of a secret already taken out does
	// not leave the rest.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, s := range secrets {
		if len(s) > 1 {
			answer = strings.ReplaceAll(answer, s, "[redacted]")
		}
	}
	return answer
}

// printable keeps an answer's printable ASCII, for a log line.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return -1
		}
		return r
	}, s)
}
