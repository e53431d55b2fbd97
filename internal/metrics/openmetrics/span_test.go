package openmetrics_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
)

func TestSpan(t *testing.T) {
	const t0 = 1796000000 // 2026-11-29T23:33:20Z
	at := func(secs int64) time.Time { return time.Unix(secs, 0).UTC() }
	// minutes writes n samples of series s, one a minute from start.
	minutes := func(s string, start int64, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%s 1 %d\n", s, start+int64(i)*60)
		}
		return b.String()
	}
	tests := []struct {
		name string
		file string
		want openmetrics.Span
	}{
		{name: "no samples", file: "# EOF\n"},
		{
			name: "a steady recording",
			file: minutes(`a{pod="x"}`, t0, 100) + minutes(`b{pod="x"}`, t0, 100) + "# EOF\n",
			want: openmetrics.Span{Oldest: at(t0), Newest: at(t0 + 99*60)},
		},
		{
			name: "a lone sample a year ahead",
			file: minutes(`a{pod="x"}`, t0, 100) + minutes(`b{pod="x"}`, t0, 100) + fmt.Sprintf("a{pod=\"x\"} 1 %d\n", t0+365*86400) + "# EOF\n",
			want: openmetrics.Span{Oldest: at(t0), Newest: at(t0 + 99*60), Stragglers: 1, Straggler: at(t0 + 365*86400), Line: 201},
		},
		{
			name: "a series that starts late is not a straggler",
			file: minutes(`a{pod="x"}`, t0, 100) + minutes(`b{pod="y"}`, t0+90*60, 10) + "# EOF\n",
			want: openmetrics.Span{Oldest: at(t0), Newest: at(t0 + 99*60)},
		},
		{
			name: "a tenth of the recording after a two-day outage keeps its end",
			file: minutes(`a{pod="x"}`, t0, 90) + minutes(`a{pod="x"}`, t0+90*60+2*86400, 10) + "# EOF\n",
			want: openmetrics.Span{Oldest: at(t0), Newest: at(t0 + 99*60 + 2*86400)},
		},
		{
			// A policy's reactive windows are minutes: evaluated two hours
			// ahead, an urgent upsize would read as stale.
			name: "a lone sample two hours ahead",
			file: minutes(`a{pod="x"}`, t0, 100) + minutes(`b{pod="x"}`, t0, 100) + fmt.Sprintf("a{pod=\"x\"} 1 %d\n", t0+99*60+2*3600) + "# EOF\n",
			want: openmetrics.Span{Oldest: at(t0), Newest: at(t0 + 99*60), Stragglers: 1, Straggler: at(t0 + 99*60 + 2*3600), Line: 201},
		},
		{
			name: "a scrape of every series after an outage keeps its end",
			file: minutes(`a{pod="x"}`, t0, 100) + minutes(`b{pod="x"}`, t0, 100) +
				fmt.Sprintf("a{pod=\"x\"} 1 %d\nb{pod=\"x\"} 1 %d\n", t0+99*60+2*3600, t0+99*60+2*3600) + "# EOF\n",
			want: openmetrics.Span{Oldest: at(t0), Newest: at(t0 + 99*60 + 2*3600)},
		},
		{
			name: "a lone sample of a lone series after an outage keeps its end",
			file: minutes(`a{pod="x"}`, t0, 100) + fmt.Sprintf("a{pod=\"x\"} 1 %d\n", t0+99*60+86400) + "# EOF\n",
			want: openmetrics.Span{Oldest: at(t0), Newest: at(t0 + 99*60 + 86400)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := openmetrics.ParseRecorded(strings.NewReader(tt.file), "m.om")
			require.NoError(t, err)
			require.Equal(t, tt.want, r.Span())
		})
	}
}
