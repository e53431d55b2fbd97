package notify_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/notify"
	"github.com/gpu-rightsizing/recommender/internal/summary"
)

func TestEvent(t *testing.T) {
	tests := []struct {
		name                string
		outcome             summary.Outcome
		err                 error
		typ, reason, prefix string
	}{
		{name: "nothing to do", outcome: summary.NothingToDo, typ: "Normal", reason: "NothingToDo",
			prefix: "GPU rightsizing run nothing to do: no pull request; "},
		{name: "changes", outcome: summary.ChangesProposed, typ: "Normal", reason: "ChangesProposed", prefix: "GPU rightsizing run changes proposed: "},
		{name: "problems", outcome: summary.Problems, typ: "Warning", reason: "ProblemsFound", prefix: "GPU rightsizing run finished with problems: "},
		{name: "failed", outcome: summary.Failed, err: errors.New(strings.Repeat("é", 2000)), typ: "Warning", reason: "RunFailed",
			prefix: "GPU rightsizing run failed: no pull request; "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, reason, note := notify.Event(summary.New(summary.Run{Outcome: tt.outcome, Err: tt.err, Duration: time.Second}))
			require.Equal(t, tt.typ, typ)
			require.Equal(t, tt.reason, reason)
			require.True(t, strings.HasPrefix(note, tt.prefix), note)
			require.LessOrEqual(t, len(note), 1024, "the API server's bound on a note")
			require.True(t, utf8.ValidString(note), "cut on a rune boundary")
		})
	}
}

func TestParseCronJob(t *testing.T) {
	tests := []struct {
		name, in string
		want     notify.CronJob
		err      string
	}{
		{name: "namespace and name", in: "gpu-rightsizing/gpu-recommender", want: notify.CronJob{Namespace: "gpu-rightsizing", Name: "gpu-recommender"}},
		{name: "no namespace", in: "gpu-recommender", err: `"gpu-recommender": want NAMESPACE/NAME`},
		{name: "a bad namespace", in: "Team_A/x", err: `namespace "Team_A": `},
		{name: "a bad name", in: "a/b/c", err: `name "b/c": `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := notify.ParseCronJob(tt.in)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
