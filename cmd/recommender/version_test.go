package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBuildVersion: what a binary says it is, from what the go command
// recorded when the linker stamped nothing.
func TestBuildVersion(t *testing.T) {
	setting := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{name: "no build info", ok: false, want: "dev"},
		{name: "go install of a release", info: &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, ok: true, want: "v1.4.0"},
		{name: "a build in a checkout", info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: setting("vcs.revision", "0ff86ba7c1d2e3f4a5b6", "vcs.modified", "false")}, ok: true, want: "dev-0ff86ba7c1d2"},
		{name: "a build with local changes", info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: setting("vcs.revision", "0ff86ba", "vcs.modified", "true")}, ok: true, want: "dev-0ff86ba-dirty"},
		{name: "reproducible, unstamped", info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, ok: true, want: "dev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, buildVersion(tc.info, tc.ok))
		})
	}
}
