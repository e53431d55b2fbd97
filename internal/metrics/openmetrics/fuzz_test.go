package openmetrics_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/located"
	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// renderOM writes series back as a recorded file.
func renderOM(series []metrics.Series) string {
	var b strings.Builder
	escape := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	for _, s := range series {
		name := s.Metric
		if len(s.Labels) > 0 {
			ls := make([]string, len(s.Labels))
			for i, l := range s.Labels {
				ls[i] = l.Name + `="` + escape.Replace(l.Value) + `"`
			}
			name += "{" + strings.Join(ls, ",") + "}"
		}
		for _, x := range s.Samples {
			b.WriteString(name + " " + strconv.FormatFloat(x.V, 'g', -1, 64) + " " + metricstest.Seconds(x.T) + "\n")
		}
	}
	return b.String() + "# EOF\n"
}

func FuzzParseRecorded(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "*.om"))
	require.NoError(f, err)
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(b)
	}
	for _, tt := range formatErrors() {
		f.Add([]byte(tt.input))
	}

	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := openmetrics.ParseRecorded(strings.NewReader(string(in)), "fuzz.om")
		if err != nil {
			var le *located.Error
			require.True(t, errors.As(err, &le) && le.File == "fuzz.om" && le.Line > 0, "error without position: %v", err)
			return
		}
		series := r.Series()
		for _, s := range series {
			for i := 1; i < len(s.Samples); i++ {
				require.Less(t, s.Samples[i-1].T, s.Samples[i].T, "series %s out of order", metricstest.SeriesString(s))
			}
		}

		again, err := openmetrics.ParseRecorded(strings.NewReader(renderOM(series)), "rendered.om")
		require.NoError(t, err, "rendered:\n%s", renderOM(series))
		require.Equal(t, metricstest.Dump(r), metricstest.Dump(again))
		require.Equal(t, r.Oldest(), again.Oldest())
		require.Equal(t, r.Newest(), again.Newest())

		// Whatever the file holds, a query over it must not fail.
		if len(series) == 0 {
			return
		}
		q := usage.Query{
			At:       r.Newest(),
			Lookback: time.Hour,
			Metrics: map[usage.Metric]usage.Mapping{
				usage.Compute: {Metric: series[0].Metric, NamespaceLabel: "namespace", PodLabel: "pod", ContainerLabel: "container"},
			},
		}
		for _, s := range series {
			for _, l := range s.Labels {
				q.Workloads = append(q.Workloads, usage.Ref{Namespace: l.Value, Kind: "Deployment", Name: l.Value})
			}
		}
		_, err = r.Usage(context.Background(), q)
		require.NoError(t, err)
	})
}
