package changes_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher/changes"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
)

// WriteFiles goes on past a file it must not write, and says which and
// why.
func TestWriteEachFile(t *testing.T) {
	tests := []struct {
		name    string
		disturb func(t *testing.T, path string)
		wantErr error
	}{
		{name: "unchanged", disturb: func(*testing.T, string) {}},
		{name: "changed on disk", wantErr: changes.ErrChangedOnDisk, disturb: func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, []byte("# mine now\n"), 0o644))
		}},
		{name: "a symbolic link now", wantErr: splice.ErrUnsupported, disturb: func(t *testing.T, p string) {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p+".real", b, 0o644))
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink(filepath.Base(p)+".real", p))
		}},
	}
	const old, new = "gpu-fraction: \"0.5\"\n", "gpu-fraction: \"0.3\"\n"
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, map[string]string{"a/d.yaml": old, "b/d.yaml": old})
			files := []changes.File{
				{Path: "a/d.yaml", Old: []byte(old), New: []byte(new)},
				{Path: "b/d.yaml", Old: []byte(old), New: []byte(new)},
			}
			disturbed := filepath.Join(root, "a", "d.yaml")
			tc.disturb(t, disturbed)
			before, err := os.ReadFile(disturbed)
			require.NoError(t, err)

			err = errors.Join(changes.WriteFiles(root, files)...)
			b, rerr := os.ReadFile(filepath.Join(root, "b", "d.yaml"))
			require.NoError(t, rerr)
			require.Equal(t, new, string(b), "the other file is written")
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

// Many files at once, as plan --write on a large repository writes them:
// every one written in place or created, one refused without stopping the
// others, and no temporary file left anywhere.
func TestWriteFilesMany(t *testing.T) {
	root := t.TempDir()
	var files []changes.File
	for i := range 200 {
		p := fmt.Sprintf("team-%02d/app-%03d.yaml", i%7, i)
		f := changes.File{Path: p, Old: []byte(fmt.Sprintf("n: %d\n", i)), New: []byte(fmt.Sprintf("n: %d\ngpu: 0.5\n", i))}
		if i%10 == 0 {
			f.Old, f.Created = nil, true
			f.Path = fmt.Sprintf("team-%02d/new-%03d.yaml", i%7, i)
		} else {
			writeFiles(t, root, map[string]string{p: string(f.Old)})
		}
		files = append(files, f)
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, files[7].Path), []byte("mine\n"), 0o644))

	errs := changes.WriteFiles(root, files)
	require.Len(t, errs, len(files))
	for i, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f.Path))
		require.NoError(t, err)
		if i == 7 {
			require.ErrorIs(t, errs[i], changes.ErrChangedOnDisk)
			require.Equal(t, "mine\n", string(b))
			continue
		}
		require.NoError(t, errs[i], f.Path)
		require.Equal(t, string(f.New), string(b), f.Path)
	}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		require.False(t, strings.HasSuffix(p, ".tmp"), "left behind: %s", p)
		return nil
	})
	require.NoError(t, err)
}

// WriteAll writes every file or none: one file changed on disk leaves
// every other file as it was, with no temporary file behind; once the
// disk is what the files were made from again, all are written.
func TestWriteAll(t *testing.T) {
	root := t.TempDir()
	var files []changes.File
	for i := range 50 {
		p := fmt.Sprintf("team-%02d/app-%03d.yaml", i%7, i)
		f := changes.File{Path: p, Old: []byte(fmt.Sprintf("n: %d\n", i)), New: []byte(fmt.Sprintf("n: %d\ngpu: 0.5\n", i))}
		writeFiles(t, root, map[string]string{p: string(f.Old)})
		files = append(files, f)
	}
	mine := filepath.Join(root, files[31].Path)
	require.NoError(t, os.WriteFile(mine, []byte("mine\n"), 0o644))

	errs, written := changes.WriteAll(root, files)
	require.False(t, written)
	require.Len(t, errs, len(files))
	for i, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f.Path))
		require.NoError(t, err)
		if i == 31 {
			require.ErrorIs(t, errs[i], changes.ErrChangedOnDisk)
			require.Contains(t, errs[i].Error(), f.Path)
			require.Equal(t, "mine\n", string(b))
			continue
		}
		require.NoError(t, errs[i], f.Path)
		require.Equal(t, string(f.Old), string(b), "%s is not written either", f.Path)
	}
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		require.False(t, strings.HasSuffix(p, ".tmp"), "left behind: %s", p)
		return err
	}))

	require.NoError(t, os.WriteFile(mine, files[31].Old, 0o644))
	errs, written = changes.WriteAll(root, files)
	require.True(t, written)
	for i, f := range files {
		require.NoError(t, errs[i])
		b, err := os.ReadFile(filepath.Join(root, f.Path))
		require.NoError(t, err)
		require.Equal(t, string(f.New), string(b))
	}
}

// writeFiles lays files out under root, as a checkout holds them.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
}
