package checkout_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
)

// TestReadTree: a chart's directory is read whole, templates included,
// by the reader's rules: dot directories skipped, symlinks to files
// inside followed, a symlink leading outside refused.
func TestReadTree(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		links   map[string]string // link -> target
		want    map[string]string
		wantErr error
	}{
		{
			name: "a chart",
			files: map[string]string{
				"charts/chat/Chart.yaml": "name: chat\n", "charts/chat/templates/deployment.yaml": "{{ .Values.x }}\n",
				"charts/chat/templates/_helpers.tpl": "{{/* */}}", "charts/chat/.helmignore": "*.bak\n",
				"charts/chat/.git/config": "x", "other/deployment.yaml": "kind: Deployment\n",
			},
			links: map[string]string{"charts/chat/values.yaml": "../../shared/values.yaml"},
			want: map[string]string{
				"Chart.yaml": "name: chat\n", "templates/deployment.yaml": "{{ .Values.x }}\n",
				"templates/_helpers.tpl": "{{/* */}}", ".helmignore": "*.bak\n", "values.yaml": "a: 1\n",
			},
		},
		{
			name:    "a symlink outside",
			files:   map[string]string{"charts/chat/Chart.yaml": "name: chat\n"},
			links:   map[string]string{"charts/chat/values.yaml": "../../../outside.yaml"},
			wantErr: checkout.ErrOutsideRoot,
		},
		{
			name:    "a symlinked directory",
			files:   map[string]string{"charts/chat/Chart.yaml": "name: chat\n"},
			links:   map[string]string{"charts/chat/templates": "../../shared"},
			wantErr: checkout.ErrLinkedDir,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			tc.files["shared/values.yaml"] = "a: 1\n"
			for p, s := range tc.files {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte(s), 0o644))
			}
			for l, target := range tc.links {
				require.NoError(t, os.Symlink(target, filepath.Join(root, l)))
			}
			d, err := checkout.OpenDir(root)
			require.NoError(t, err)
			defer d.Close()
			files, err := checkout.Read(context.Background(), d, checkout.Options{})
			require.NoError(t, err)
			got, err := files.ReadTree("charts/chat")
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				for l := range tc.links {
					require.ErrorContains(t, err, filepath.Base(l))
				}
				return
			}
			require.NoError(t, err)
			str := map[string]string{}
			for p, b := range got {
				str[p] = string(b)
			}
			require.Equal(t, tc.want, str)
		})
	}
	_, err := (&checkout.Files{}).ReadTree("x")
	require.ErrorIs(t, err, checkout.ErrNoTree)
}
