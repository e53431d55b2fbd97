package prometheus_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
)

// A range whose answer is longer than the bounds is asked for in pieces
// sized from the answers before them: no answer is read past the bounds
// and asked for again, and the usage is that of one answer for the whole
// range. The server answers as BenchmarkE2EPrometheus's does.
func TestPrometheusPiecesSizedAhead(t *testing.T) {
	const pods = 40
	whole, err := fleetAnswer(io.Discard, pods, metricstest.T0.Add(-24*time.Hour).Unix(), metricstest.T0.Unix())
	require.NoError(t, err)

	tests := []struct {
		name     string
		perPiece int64 // the bound on an answer, and a quarter of those at once
		pieces   int   // at least, for the namespace selector
		given    int64 // the bytes of answers given up, at most
	}{
		{name: "the whole day in one answer", perPiece: 128 << 20, pieces: 2},
		{name: "a day over a few answers", perPiece: whole / 3, pieces: 4},
		{name: "a day over many answers", perPiece: whole / 5, pieces: 7},
		{
			// 4 hours, the first piece before, were too long: that
			// answer and both its halves were given up (a third of the
			// day written for nothing). The first 15 minutes fit, and
			// size the rest.
			name: "the first 4 hours too long", perPiece: whole / 12, pieces: 16,
		},
	}
	var want string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rp := &replay{pods: pods}
			var asked atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if err := r.ParseForm(); err == nil && strings.Contains(r.Form.Get("query"), ", namespace=~") {
					asked.Add(1)
				}
				rp.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			// Nothing here fails on purpose: a bound a loaded machine
			// cannot miss (a piece took over 5 s at a load of 13).
			prom := newPrometheus(t, srv.URL, func(c *prometheus.Config) { c.Timeout = time.Minute })
			prometheus.SetBodyBounds(prom, tt.perPiece, 4*tt.perPiece)
			res, err := prom.Usage(context.Background(), e2eQuery(pods, 24*time.Hour))
			require.NoError(t, err)
			require.Len(t, res.Workloads, pods)
			if want == "" {
				want = metricstest.Workloads(res)
			}
			require.Equal(t, want, metricstest.Workloads(res))
			require.GreaterOrEqual(t, int(asked.Load()), tt.pieces)
			rp.mu.Lock()
			defer rp.mu.Unlock()
			// Each piece repeats the series' labels: a tenth more at most.
			require.LessOrEqual(t, rp.bytes, whole+tt.given+whole/10, "%d bytes written for a day of %d", rp.bytes, whole)
		})
	}
}
