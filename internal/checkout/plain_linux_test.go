package checkout

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
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

// TestReadSameEitherWay: a checkout read with the one-call open gives what
// the Root's way gives, file for file and problem for problem, on a tree
// of every kind of entry the reader meets.
func TestReadSameEitherWay(t *testing.T) {
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte("a: 1\n"), 0o644))
	root := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	link := func(name, target string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.Symlink(target, p))
	}
	write("apps/a/d.yaml", "kind: Deployment\n")
	write("apps/b/e.yml", "kind: Service\n")
	write(".git/x.yaml", "a: 1\n")
	write("charts/c/Chart.yaml", "name: c\n")
	write("charts/c/templates/t.yaml", "{{ .Values }}\n")
	link("apps/same.yaml", "a/d.yaml")
	link("apps/up.yaml", "../apps/b/e.yml")
	link("linked", "apps")
	link("out.yaml", filepath.Join(outside, "secret.yaml"))
	link("climb.yaml", "../../secret.yaml")
	link("dangling.yaml", "nowhere.yaml")
	link("loop.yaml", "loop.yaml")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "dir.yaml"), 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo.yaml"), 0o644))
	write("bad\x01name.yaml", "a: 1\n")

	fast, err := OpenDir(root)
	require.NoError(t, err)
	t.Cleanup(func() { fast.Close() })
	slow := *fast
	slow.dir = nil
	read := func(d *Dir) *Files {
		fs, err := Read(context.Background(), d, Options{})
		require.NoError(t, err)
		return fs
	}
	got, want := read(fast), read(&slow)
	require.NotEmpty(t, want.Files)
	require.NotEmpty(t, want.Problems)
	require.Equal(t, len(want.Files), len(got.Files))
	for i := range want.Files {
		require.Equal(t, want.Files[i].Path, got.Files[i].Path)
		require.Equal(t, want.Files[i].Links, got.Files[i].Links)
		require.Equal(t, want.Files[i].Data, got.Files[i].Data)
	}
	require.Equal(t, len(want.Problems), len(got.Problems))
	for i := range want.Problems {
		require.Equal(t, want.Problems[i].Error(), got.Problems[i].Error())
	}
	for _, name := range []string{"apps/a/d.yaml", "apps/same.yaml", "linked/a/d.yaml", "out.yaml", "climb.yaml",
		"dangling.yaml", "loop.yaml", "dir.yaml", "fifo.yaml", "none.yaml", "apps/a/d.yaml/x"} {
		wb, werr := ReadFile(&slow, name)
		gb, gerr := ReadFile(fast, name)
		require.Equal(t, wb, gb, name)
		if werr == nil {
			require.NoError(t, gerr, name)
			continue
		}
		require.EqualError(t, gerr, werr.Error(), name)
	}
}

// TestReadPlain: the read on the bare descriptor keeps readOpen's rules:
// regular files only, the bound on the size and on what is read.
func TestReadPlain(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "d.yaml"), []byte("kind: Deployment\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "empty.yaml"), nil, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(root, "dir.yaml"), 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo.yaml"), 0o644))
	require.NoError(t, os.Symlink("d.yaml", filepath.Join(root, "link.yaml")))
	d, err := OpenDir(root)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })

	for _, tt := range []struct {
		name    string
		max     int64
		read    bool // the one-call open took it
		want    string
		wantErr error
	}{
		{"d.yaml", MaxFileSize, true, "kind: Deployment\n", nil},
		{"d.yaml", 17, true, "kind: Deployment\n", nil},
		{"d.yaml", 16, true, "", ErrTooLarge},
		{"empty.yaml", MaxFileSize, true, "", nil},
		{"dir.yaml", MaxFileSize, true, "", ErrNotRegular},
		{"fifo.yaml", MaxFileSize, true, "", ErrNotRegular},
		{"link.yaml", MaxFileSize, false, "", nil},
		{"none.yaml", MaxFileSize, false, "", nil},
	} {
		b, ok, err := readPlain(d.dir, tt.name, tt.max)
		require.Equal(t, tt.read, ok, tt.name)
		if tt.wantErr != nil {
			require.ErrorIs(t, err, tt.wantErr, tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.want, string(b), tt.name)
		if ok {
			require.Equal(t, len(b)+1, cap(b), "%s: sized once, with the byte that sees the end", tt.name)
		}
	}
	_, ok, _ := readPlain(nil, "d.yaml", MaxFileSize)
	require.False(t, ok, "no directory open beside the Root")
}
