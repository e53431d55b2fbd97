package openmetrics_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// createBlocks runs promtool's backfill on file, the way a recording is
// loaded into a Prometheus, and returns its error and output.
func createBlocks(t *testing.T, promtool, file, db string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, promtool, "tsdb", "create-blocks-from", "openmetrics", file, db).CombinedOutput()
	return string(out), err
}

// dumpBlocks returns the samples of the blocks in db, one a line, as
// `promtool tsdb dump` prints them.
func dumpBlocks(t *testing.T, promtool, db string) []string {
	t.Helper()
	// dump opens the directory as a TSDB, which needs a WAL directory.
	require.NoError(t, os.MkdirAll(filepath.Join(db, "wal"), 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, promtool, "tsdb", "dump", db).Output()
	require.NoError(t, err)
	return strings.FieldsFunc(string(out), func(r rune) bool { return r == '\n' })
}

// promtoolDump renders a recording as `promtool tsdb dump` does.
func promtoolDump(r *openmetrics.Recorded) []string {
	var out []string
	for _, s := range r.Series() {
		ls := append([]metrics.Label{{Name: "__name__", Value: s.Metric}}, s.Labels...)
		slices.SortFunc(ls, func(a, b metrics.Label) int { return strings.Compare(a.Name, b.Name) })
		parts := make([]string, len(ls))
		for i, l := range ls {
			parts[i] = l.Name + "=" + strconv.Quote(l.Value)
		}
		for _, x := range s.Samples {
			out = append(out, fmt.Sprintf("{%s} %s %d", strings.Join(parts, ", "), metricstest.FormatValue(x.V), x.T))
		}
	}
	return out
}

// TestPromtoolAgrees holds the parser to promtool's: every file the parser
// accepts, promtool backfills, and every file it rejects for its format,
// promtool rejects too.
func TestPromtoolAgrees(t *testing.T) {
	promtool := testenv.LookPath(t, "promtool")

	t.Run("accepted", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join("..", "testdata", "*.om"))
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(files), 4)
		for _, file := range files {
			t.Run(filepath.Base(file), func(t *testing.T) {
				t.Parallel()
				r, err := openmetrics.OpenRecorded(file)
				require.NoError(t, err)

				db := t.TempDir()
				out, err := createBlocks(t, promtool, file, db)
				require.NoError(t, err, out)
				// The backfilled blocks hold the same samples, but for the
				// timestamps with digits below the millisecond, which
				// promtool truncates and the parser rounds.
				want := promtoolDump(r)
				for i, s := range want {
					if s == `{__name__="kubex_gpu_container_sm_utilization_percent", container="server", namespace="team-a", pod="chat-7d9f8c6b5d-x2b4z"} -Inf 1700000180001` {
						want[i] = strings.TrimSuffix(s, "1") + "0" // 1700000180.0005
					}
				}
				require.ElementsMatch(t, want, dumpBlocks(t, promtool, db))
			})
		}
	})

	t.Run("rejected", func(t *testing.T) {
		for _, tt := range formatErrors() {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				file := filepath.Join(t.TempDir(), "x.om")
				require.NoError(t, os.WriteFile(file, []byte(tt.input), 0o644))
				_, err := openmetrics.OpenRecorded(file)
				require.Error(t, err)

				out, err := createBlocks(t, promtool, file, t.TempDir())
				if tt.promtoolAccepts != "" {
					require.NoError(t, err, "promtool no longer accepts this (%s): the parser may now follow it\n%s", tt.promtoolAccepts, out)
					return
				}
				require.Error(t, err, "promtool accepts what the parser rejects with %q", tt.wantErr)
				var exit *exec.ExitError
				require.ErrorAs(t, err, &exit, out)
				require.True(t, strings.Contains(out, "getting min and max timestamp") || strings.Contains(out, "add sample") || strings.Contains(out, "mmap"),
					"promtool failed for another reason than the input:\n%s", out)
			})
		}
	})
}
