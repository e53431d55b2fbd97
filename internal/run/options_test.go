package run_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/run"
)

// TestLiveCheckNamespaces: `--live-namespaces ""` would let the live path
// list every namespace; it and a repeated name are mistakes in a setting.
func TestLiveCheckNamespaces(t *testing.T) {
	for _, tt := range []struct {
		name string
		ns   []string
		want string
	}{
		{name: "an empty name", ns: []string{""}, want: "namespace 1 is empty"},
		{name: "a name twice", ns: []string{"inference", "inference"}, want: "named twice"},
		{name: "none", want: "`--live` needs `--live-namespaces`"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := (&run.Live{Enabled: true, Namespaces: tt.ns, MaxChanges: 1}).Check()
			require.ErrorContains(t, err, tt.want)
			var fe *config.FlagError
			require.True(t, errors.As(err, &fe))
		})
	}
	require.NoError(t, (&run.Live{Enabled: true, Namespaces: []string{"inference", "staging"}}).Check())
}
