package publish_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/publish"
)

func TestReportWriteTable(t *testing.T) {
	results := []publish.Result{
		{Key: "ml/Deployment/chat", Branch: "gpu-rightsizing/ml/chat", Outcome: publish.Opened, Number: 7},
		{Key: "ml/Deployment/embed\x1b[31m", Branch: "gpu-rightsizing/ml/embed", Outcome: publish.Closed, Detail: "fits now"},
	}
	tests := []struct {
		name   string
		dryRun bool
		looks  []publish.LookAlike
		want   string
	}{
		{name: "a run", want: "CHANGE SET                   BRANCH                    OUTCOME  PULL REQUEST  DETAIL\n" +
			"ml/Deployment/chat           gpu-rightsizing/ml/chat   opened   #7            \n" +
			"ml/Deployment/embed\\x1b[31m  gpu-rightsizing/ml/embed  closed   -             fits now\n" +
			"\n1 opened, 0 updated, 0 unchanged, 1 closed, 0 declined, 0 failed\n"},
		{name: "a dry run says what it would do", dryRun: true, want: "CHANGE SET                   BRANCH                    OUTCOME      PULL REQUEST  DETAIL\n" +
			"ml/Deployment/chat           gpu-rightsizing/ml/chat   would open   #7            \n" +
			"ml/Deployment/embed\\x1b[31m  gpu-rightsizing/ml/embed  would close  -             fits now\n" +
			"\ndry run, nothing written: 1 would open, 0 would update, 0 unchanged, 1 would close, 0 declined, 0 failed\n"},
		{name: "a look-alike left alone", looks: []publish.LookAlike{{Number: 9, Branch: "gpu-rightsizing/ml/chat", Why: "from a fork"}},
			want: "CHANGE SET                   BRANCH                    OUTCOME  PULL REQUEST  DETAIL\n" +
				"ml/Deployment/chat           gpu-rightsizing/ml/chat   opened   #7            \n" +
				"ml/Deployment/embed\\x1b[31m  gpu-rightsizing/ml/embed  closed   -             fits now\n" +
				"\n1 opened, 0 updated, 0 unchanged, 1 closed, 0 declined, 0 failed\n" +
				"left alone, not the tool's: #9 gpu-rightsizing/ml/chat (from a fork)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, (&publish.Report{Results: results, DryRun: tt.dryRun, LookAlikes: tt.looks}).WriteTable(&b))
			require.Equal(t, tt.want, b.String())
		})
	}
}

func TestConventional(t *testing.T) {
	tests := []struct {
		name, message string
		want          bool
	}{
		{name: "type and scope", message: "feat(api): add a thing\n\nbody", want: true},
		{name: "type", message: "fix: a bug", want: true},
		{name: "breaking", message: "refactor!: drop v1", want: true},
		{name: "plain", message: "Add a thing", want: false},
		{name: "no space after the colon", message: "fix:a bug", want: false},
		{name: "capitalised type", message: "Fix: a bug", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, publish.Conventional(tt.message))
		})
	}
}
