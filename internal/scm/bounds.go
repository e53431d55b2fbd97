package scm

import (
	"fmt"
	"io"
	"net/http"
)

// What a forge's answers may cost a run: a server whose next page never
// ends, or whose answers are huge, must not hang a run or exhaust its
// memory.
const (
	// maxPages bounds a listing.
	maxPages = 100
	// maxResponseBytes bounds one answer. A page of 100 pull requests
	// with the largest bodies GitHub accepts (65,536 characters) is under
	// 26 MiB.
	maxResponseBytes = 32 << 20
	// maxBodyBytes bounds a pull request's body as it is kept: GitHub
	// refuses a longer one (65,536 characters of at most 4 bytes), and
	// the tool writes far shorter ones, so a longer body is none of the
	// tool's; it is kept empty (no marker).
	maxBodyBytes = 256 << 10
)

// boundedTransport fails an answer longer than maxResponseBytes while it
// is read, instead of reading it all into memory.
type boundedTransport struct {
	next http.RoundTripper
}

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{rc: resp.Body, left: maxResponseBytes}
	return resp, nil
}

type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("%w: more than %d MiB", errAnswerTooLong, maxResponseBytes>>20)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// keptBody is a pull request's body as it is kept.
func keptBody(s string) string {
	if len(s) > maxBodyBytes {
		return ""
	}
	return s
}
