package checkout

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpenPlain: the one-call open takes only names without a symlink on
// the way; every other name is left to the Root, which reads it as before.
func TestOpenPlain(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "apps", "a"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "apps", "a", "d.yaml"), []byte("kind: Deployment\n"), 0o644))
	require.NoError(t, os.Symlink("apps", filepath.Join(root, "linked")))
	require.NoError(t, os.Symlink("a/d.yaml", filepath.Join(root, "apps", "final.yaml")))
	d, err := OpenDir(root)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })

	for name, plain := range map[string]bool{
		"apps/a/d.yaml":    true,
		"apps":             true,
		"linked/a/d.yaml":  false, // a symlinked directory on the way
		"apps/final.yaml":  false, // a final symlink
		"apps/a/none.yaml": false,
		"apps/a/d.yaml/x":  false,
	} {
		f, ok := openPlain(d.dir, name)
		require.Equal(t, plain, ok, name)
		if ok {
			f.Close()
		}
	}
	_, ok := openPlain(nil, "apps/a/d.yaml")
	require.False(t, ok, "no directory open beside the Root")

	// The names it leaves are read the Root's way, as before.
	for _, name := range []string{"apps/a/d.yaml", "linked/a/d.yaml", "apps/final.yaml"} {
		b, err := ReadFile(d, name)
		require.NoError(t, err, name)
		require.Equal(t, "kind: Deployment\n", string(b), name)
	}
	es, err := d.ReadDir("linked/a")
	require.NoError(t, err)
	require.Len(t, es, 1)
	_, err = ReadFile(d, "apps")
	require.ErrorIs(t, err, ErrNotRegular)
}
