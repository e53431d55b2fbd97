package patcher_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
)

// Write goes on past a file it must not write, and says which and why.
func TestWriteEachFile(t *testing.T) {
	tests := []struct {
		name    string
		disturb func(t *testing.T, path string)
		wantErr error
	}{
		{name: "unchanged", disturb: func(*testing.T, string) {}},
		{name: "changed on disk", wantErr: patcher.ErrChangedOnDisk, disturb: func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, []byte("# mine now\n"), 0o644))
		}},
		{name: "a symbolic link now", wantErr: patcher.ErrUnsupported, disturb: func(t *testing.T, p string) {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p+".real", b, 0o644))
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink(filepath.Base(p)+".real", p))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, map[string]string{"a/d.yaml": applyDeployment, "b/d.yaml": applyDeployment})
			res := &patcher.Result{}
			for _, dir := range []string{"a", "b"} {
				_, r := applyOne(t, map[string]string{"d.yaml": applyDeployment}, patcher.SetGPUFraction("0.3"))
				f := r.Files[0]
				f.Path = dir + "/d.yaml"
				res.Files = append(res.Files, f)
			}
			disturbed := filepath.Join(root, "a", "d.yaml")
			tc.disturb(t, disturbed)
			before, err := os.ReadFile(disturbed)
			require.NoError(t, err)

			err = res.Write(root)
			b, rerr := os.ReadFile(filepath.Join(root, "b", "d.yaml"))
			require.NoError(t, rerr)
			require.Equal(t, string(res.Files[1].New), string(b), "the other file is written")
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
			require.ErrorContains(t, err, "write a/d.yaml: ")
			after, rerr := os.ReadFile(disturbed)
			require.NoError(t, rerr)
			require.Equal(t, string(before), string(after), "the disturbed file is left alone")
		})
	}
}
