package checkout_test

import (
	"context"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
)

// writeTree creates files under root; a value starting with "->" makes a
// symlink to the rest, and a name ending in "/" an empty directory.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if target, ok := strings.CutPrefix(body, "->"); ok {
			require.NoError(t, os.Symlink(target, p))
			continue
		}
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

func openDir(t *testing.T, root string) *checkout.Dir {
	t.Helper()
	d, err := checkout.OpenDir(root)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

// summary is what a test compares: each file as its path and, after "<-",
// its links; each problem as its text.
func summary(fs *checkout.Files) (files, problems []string) {
	for _, f := range fs.Files {
		s := f.Path
		if len(f.Links) > 0 {
			s += " <- " + strings.Join(f.Links, " ")
		}
		files = append(files, s)
	}
	for _, p := range fs.Problems {
		problems = append(problems, p.Error())
	}
	return files, problems
}

// TestRead: each rule of the reader on a working tree.
func TestRead(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.yaml": "a: 1\n", "dir/x.yaml": "a: 1\n"})
	tests := []struct {
		name     string
		tree     map[string]string
		files    []string
		problems []string
	}{
		{
			name: "dot directories are skipped",
			tree: map[string]string{
				"a.yaml": "a: 1\n", ".git/config.yaml": "a: 1\n", ".github/workflows/ci.yml": "a: 1\n",
				"apps/.hidden/x.yaml": "a: 1\n", "apps/.dotfile.yaml": "a: 1\n",
			},
			files: []string{"a.yaml", "apps/.dotfile.yaml"},
		},
		{
			name: "a chart's templates are skipped, other templates are not",
			tree: map[string]string{
				"charts/c/Chart.yaml": "name: c\n", "charts/c/values.yaml": "a: 1\n",
				"charts/c/templates/d.yaml":     "{{ .Values }}\n",
				"charts/c/templates/sub/e.yaml": "{{ .Values }}\n",
				"apps/templates/d.yaml":         "a: 1\n",
				"odd/Chart.yaml/":               "",
				"odd/templates/d.yaml":          "a: 1\n",
			},
			files: []string{"apps/templates/d.yaml", "charts/c/Chart.yaml", "charts/c/values.yaml", "odd/templates/d.yaml"},
		},
		{
			name: "the extension in any case",
			tree: map[string]string{
				"a.YAML": "a: 1\n", "b.Yml": "a: 1\n", "c.yml": "a: 1\n", "d.txt": "a: 1\n", "yaml": "a: 1\n", "e.yaml.bak": "a: 1\n",
			},
			files: []string{"a.YAML", "b.Yml", "c.yml"},
		},
		{
			name: "Kustomization, exactly so, without an extension",
			tree: map[string]string{
				"base/Kustomization": "resources: []\n", "other/kustomization": "a: 1\n", "other/Kustomization.bak": "a: 1\n",
			},
			files: []string{"base/Kustomization"},
		},
		{
			name: "a link to a file found directly adds a name to it",
			tree: map[string]string{
				"apps/a.yaml": "a: 1\n", "links/a.yaml": "->../apps/a.yaml", "links/b.yml": "->../apps/a.yaml",
				"links/chain.yaml": "->b.yml", "links/notyaml": "->../apps/a.yaml",
			},
			files: []string{"apps/a.yaml <- links/a.yaml links/b.yml links/chain.yaml"},
		},
		{
			name: "a link to a file not found directly reads it under its own path",
			tree: map[string]string{
				"data/a.txt": "a: 1\n", "a.yaml": "->data/a.txt", "b.yaml": "->data/a.txt",
				".hidden/c.yaml": "a: 1\n", "c.yaml": "->.hidden/c.yaml",
			},
			files: []string{".hidden/c.yaml <- c.yaml", "data/a.txt <- a.yaml b.yaml"},
		},
		{
			name: "links leading outside are problems, never read",
			tree: map[string]string{
				"abs.yaml": "->" + filepath.Join(outside, "secret.yaml"), "up.yaml": "->../../../../../../../etc/passwd",
				"apps/up.yaml": "->../../x.yaml", "dir": "->" + filepath.Join(outside, "dir"), "via.yaml": "->dir/x.yaml",
			},
			problems: []string{
				"abs.yaml: symlink leads outside the checkout", "apps/up.yaml: symlink leads outside the checkout",
				"up.yaml: symlink leads outside the checkout", "via.yaml: symlink leads outside the checkout",
			},
		},
		{
			name:  "links to directories are not followed",
			tree:  map[string]string{"apps/a.yaml": "a: 1\n", "again": "->apps", "again.yaml": "->apps", "loop/self": "->.."},
			files: []string{"apps/a.yaml"},
		},
		{
			name: "dangling and looping links are problems",
			tree: map[string]string{"gone.yaml": "->nothing.yaml", "a.yaml": "->b.yaml", "b.yaml": "->a.yaml"},
			problems: []string{
				"a.yaml: too many levels of symbolic links",
				"b.yaml: too many levels of symbolic links",
				"gone.yaml: statat nothing.yaml: no such file or directory",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tt.tree)
			got, err := checkout.Read(context.Background(), openDir(t, root), checkout.Options{})
			require.NoError(t, err)
			files, problems := summary(got)
			require.Equal(t, tt.files, files)
			require.Equal(t, tt.problems, problems)
		})
	}
}

func TestReadData(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"b.yaml": "b: 2\n", "a/x.yml": "x: 1\n", "c.yaml": ""})
	got, err := checkout.Read(context.Background(), openDir(t, root), checkout.Options{})
	require.NoError(t, err)
	require.Equal(t, []checkout.File{
		{Path: "a/x.yml", Data: []byte("x: 1\n")},
		{Path: "b.yaml", Data: []byte("b: 2\n")},
		{Path: "c.yaml", Data: []byte{}},
	}, got.Files)
	require.Empty(t, got.Problems)
}

// TestReadDataTight: a run holds every file it reads, so each file's
// bytes take their size, not a read buffer's spare room (which was half
// again the YAML of a repository of 1 KB files).
func TestReadDataTight(t *testing.T) {
	tests := []struct {
		name string
		size int
	}{
		{"empty", 0},
		{"1 KB", 1066},
		{"64 KB", 64 << 10},
		{"larger than a read", 300 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			body := strings.Repeat("a: 1\n", tt.size/5+1)[:tt.size]
			writeTree(t, root, map[string]string{"f.yaml": body})
			got, err := checkout.Read(context.Background(), openDir(t, root), checkout.Options{})
			require.NoError(t, err)
			require.Len(t, got.Files, 1)
			require.Equal(t, body, string(got.Files[0].Data))
			require.LessOrEqual(t, cap(got.Files[0].Data), tt.size+1, "spare room kept with the file")
		})
	}
}

// TestOpenDirSymlinkedRoot: a root that is a symlink (or a dot directory)
// is resolved once, and the rules apply inside it.
func TestOpenDirSymlinkedRoot(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.yaml": "a: 1\n"})
	real := filepath.Join(t.TempDir(), ".repo")
	writeTree(t, real, map[string]string{
		"a/d.yaml": "a: 1\n", "link.yaml": "->a/d.yaml", "out.yaml": "->" + filepath.Join(outside, "secret.yaml"),
	})
	link := filepath.Join(t.TempDir(), "checkout")
	require.NoError(t, os.Symlink(real, link))
	d := openDir(t, link)
	resolved, err := filepath.EvalSymlinks(real)
	require.NoError(t, err)
	require.Equal(t, resolved, d.Path())
	got, err := checkout.Read(context.Background(), d, checkout.Options{})
	require.NoError(t, err)
	files, problems := summary(got)
	require.Equal(t, []string{"a/d.yaml <- link.yaml"}, files)
	require.Equal(t, []string{"out.yaml: symlink leads outside the checkout"}, problems)

	_, err = checkout.OpenDir(filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// readSoon runs Read and fails the test, instead of hanging it, when Read
// does not return within hang.
func readSoon(t *testing.T, fsys fs.FS) *checkout.Files {
	t.Helper()
	type result struct {
		files *checkout.Files
		err   error
	}
	done := make(chan result, 1)
	go func() {
		files, err := checkout.Read(context.Background(), fsys, checkout.Options{})
		done <- result{files, err}
	}()
	select {
	case r := <-done:
		require.NoError(t, r.err)
		return r.files
	case <-time.After(hang):
		t.Fatal("Read hangs")
		return nil
	}
}

// lyingFS reports every entry as a regular file, as a tree changing under
// the reader might: what is opened must still be checked.
type lyingFS struct{ *checkout.Dir }

func (l lyingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	es, err := l.Dir.ReadDir(name)
	for i, e := range es {
		if !e.IsDir() {
			es[i] = regularEntry{e}
		}
	}
	return es, err
}

func (l lyingFS) Lstat(name string) (fs.FileInfo, error) {
	fi, err := l.Dir.Lstat(name)
	if err == nil && !fi.IsDir() {
		fi = regularInfo{fi}
	}
	return fi, err
}

type regularEntry struct{ fs.DirEntry }

func (regularEntry) Type() fs.FileMode { return 0 }

type regularInfo struct{ fs.FileInfo }

func (regularInfo) Mode() fs.FileMode { return 0o644 }

// TestReadSpecialFiles: a FIFO or a device named *.yaml is refused, found
// by its type in the directory or, when that lies, on the opened file; a
// FIFO must not hang the run, a device must not be read forever.
func TestReadSpecialFiles(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.yaml": "a: 1\n", "link.yaml": "->fifo.yaml"})
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo.yaml"), 0o644))
	want := []string{"fifo.yaml: not a regular file", "link.yaml: not a regular file"}
	if err := syscall.Mknod(filepath.Join(root, "zero.yaml"), syscall.S_IFCHR|0o644, 1<<8|5); err == nil {
		want = append(want, "zero.yaml: not a regular file")
	} else {
		t.Logf("no character device (%v): only the FIFO is tested", err)
	}
	tests := []struct {
		name     string
		fsys     func(*checkout.Dir) fs.FS
		problems []string
	}{
		{name: "told by the directory", fsys: func(d *checkout.Dir) fs.FS { return d }, problems: want},
		{
			name: "found on the opened file", fsys: func(d *checkout.Dir) fs.FS { return lyingFS{d} },
			// The link, taken for a file, is opened as one, and what it
			// leads to is refused on the handle.
			problems: want,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readSoon(t, tt.fsys(openDir(t, root)))
			files, problems := summary(got)
			require.Equal(t, []string{"a.yaml"}, files)
			require.Equal(t, tt.problems, problems)
			for _, p := range got.Problems {
				require.ErrorIs(t, p, checkout.ErrNotRegular)
			}
		})
	}
	_, err := checkout.ReadFile(openDir(t, root), "link.yaml")
	require.ErrorIs(t, err, checkout.ErrNotRegular)
}

func TestReadSizeCap(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"at.yaml":   strings.Repeat("#", checkout.MaxFileSize),
		"over.yaml": strings.Repeat("#", checkout.MaxFileSize+1),
		"small.yml": "a: 1\n",
	})
	tests := []struct {
		name     string
		max      int64
		files    []string
		problems []string
	}{
		{
			name: "the default", files: []string{"at.yaml", "small.yml"},
			problems: []string{"over.yaml: file too large: more than 8388608 bytes"},
		},
		{
			name: "a smaller cap", max: 5, files: []string{"small.yml"},
			problems: []string{"at.yaml: file too large: more than 5 bytes", "over.yaml: file too large: more than 5 bytes"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkout.Read(context.Background(), openDir(t, root), checkout.Options{MaxFileSize: tt.max})
			require.NoError(t, err)
			files, problems := summary(got)
			require.Equal(t, tt.files, files)
			require.Equal(t, tt.problems, problems)
			for _, p := range got.Problems {
				require.ErrorIs(t, p, checkout.ErrTooLarge)
			}
		})
	}
	_, err := checkout.ReadFile(openDir(t, root), "over.yaml")
	require.ErrorIs(t, err, checkout.ErrTooLarge)
	b, err := checkout.ReadFile(openDir(t, root), "small.yml")
	require.NoError(t, err)
	require.Equal(t, "a: 1\n", string(b))
}

// TestReadControlNames: a file or directory whose name holds a control
// character is not read, and is a problem naming it; the rest is read.
func TestReadControlNames(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"apps/chat.yaml":        "a: 1\n",
		"apps/bad\x01name.yaml": "a: 2\n",
		"apps/d\x02ir/x.yaml":   "a: 3\n",
		"apps/del\x7f.yml":      "a: 4\n",
	})
	got, err := checkout.Read(context.Background(), openDir(t, root), checkout.Options{})
	require.NoError(t, err)
	files, problems := summary(got)
	require.Equal(t, []string{"apps/chat.yaml"}, files)
	require.Equal(t, []string{
		"apps/bad\x01name.yaml: a control character in the name: not read",
		"apps/d\x02ir: a control character in the name: not read",
		"apps/del\x7f.yml: a control character in the name: not read",
	}, problems)
}

// TestReadTotalCap: YAML files past their bound together are an error
// that names the file where they passed it, and nothing is read: a
// repository read in part could lose the policy that governs a workload.
func TestReadTotalCap(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"a.yaml":   strings.Repeat("#", 40),
		"b/c.yaml": strings.Repeat("#", 40),
		"d.yml":    strings.Repeat("#", 40),
		"e.txt":    strings.Repeat("#", 400), // not YAML: not counted
	})
	tests := []struct {
		name, err string
		total     int64
		files     []string
	}{
		{name: "within", total: 120, files: []string{"a.yaml", "b/c.yaml", "d.yml"}},
		{name: "past it", total: 100, err: "d.yml: file too large: the checkout's YAML files pass 0 MiB together here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkout.Read(context.Background(), openDir(t, root), checkout.Options{MaxTotalSize: tt.total})
			if tt.err != "" {
				require.ErrorIs(t, err, checkout.ErrTooLarge)
				require.ErrorContains(t, err, tt.err)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			files, _ := summary(got)
			require.Equal(t, tt.files, files)
		})
	}
}

// TestTotalBound: the bound on a checkout's YAML follows the memory
// limit, a fortieth of it (kyaml's nodes take about forty times the
// text), within MaxFileSize and MaxTotalSize.
func TestTotalBound(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	tests := []struct {
		name  string
		limit int64
		want  int64
	}{
		{"no limit", math.MaxInt64, checkout.MaxTotalSize},
		{"the chart's default GOMEMLIMIT", 320 << 20, 8 << 20},
		{"1.25 GiB", 1280 << 20, 32 << 20},
		{"a small limit", 64 << 20, checkout.MaxFileSize},
		{"a large limit", 64 << 30, checkout.MaxTotalSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetMemoryLimit(tt.limit)
			require.Equal(t, tt.want, checkout.TotalBound())
		})
	}
}

// TestReadUnreadable: a directory or file that cannot be read is a
// problem naming it; the rest is still read. Root reads anything, so as
// root the test runs itself again as the user nobody.
func TestReadUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		asNobody(t)
		return
	}
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.yaml": "a: 1\n", "locked/b.yaml": "b: 1\n", "secret.yaml": "s: 1\n"})
	require.NoError(t, os.Chmod(filepath.Join(root, "secret.yaml"), 0))
	require.NoError(t, os.Chmod(filepath.Join(root, "locked"), 0))
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "locked"), 0o755) })
	if _, err := os.ReadFile(filepath.Join(root, "secret.yaml")); err == nil {
		t.Fatal("permissions are not enforced for this user")
	}
	got, err := checkout.Read(context.Background(), openDir(t, root), checkout.Options{})
	require.NoError(t, err)
	files, problems := summary(got)
	require.Equal(t, []string{"a.yaml"}, files)
	require.Equal(t, []string{"locked: permission denied", "secret.yaml: permission denied"}, problems)
}

// faultFS fails to list or open the paths it is given, as a tree with
// unreadable parts does for any user: unlike chmod, this also runs as root.
type faultFS struct {
	fstest.MapFS
	fail map[string]bool
}

func (f faultFS) Open(name string) (fs.File, error) {
	if f.fail[name] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return f.MapFS.Open(name)
}

func (f faultFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if f.fail[name] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return f.MapFS.ReadDir(name)
}

func (f faultFS) Lstat(name string) (fs.FileInfo, error) { return f.MapFS.Lstat(name) }
func (f faultFS) ReadLink(name string) (string, error)   { return f.MapFS.ReadLink(name) }

func TestReadFaults(t *testing.T) {
	fsys := faultFS{
		MapFS: fstest.MapFS{
			"a.yaml":        {Data: []byte("a: 1\n")},
			"locked/b.yaml": {Data: []byte("b: 1\n")},
			"secret.yaml":   {Data: []byte("s: 1\n")},
			"z.yaml":        {Data: []byte("z: 1\n")},
		},
		fail: map[string]bool{"locked": true, "secret.yaml": true},
	}
	got, err := checkout.Read(context.Background(), fsys, checkout.Options{})
	require.NoError(t, err)
	files, problems := summary(got)
	require.Equal(t, []string{"a.yaml", "z.yaml"}, files)
	require.Equal(t, []string{"locked: permission denied", "secret.yaml: permission denied"}, problems)
	for _, p := range got.Problems {
		require.ErrorIs(t, p, fs.ErrPermission)
	}
}

// TestReadFS: the same rules on a tree that is not on disk, as a Git tree
// at a commit will be.
func TestReadFS(t *testing.T) {
	link := func(target string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink}
	}
	fsys := fstest.MapFS{
		"apps/a.yaml":             {Data: []byte("a: 1\n")},
		"apps/b.YML":              {Data: []byte("b: 1\n")},
		".git/HEAD.yaml":          {Data: []byte("x\n")},
		"chart/Chart.yaml":        {Data: []byte("name: c\n")},
		"chart/templates/d.yaml":  {Data: []byte("{{ x }}\n")},
		"links/a.yaml":            link("../apps/a.yaml"),
		"links/out.yaml":          link("../../etc/passwd"),
		"links/abs.yaml":          link("/etc/passwd"),
		"links/dir.yaml":          link("../apps"),
		"policies":                link("apps"),
		"policies-out":            link(".."),
		"apps/nested/deep/c.yaml": {Data: []byte("c: 1\n")},
	}
	got, err := checkout.Read(context.Background(), fsys, checkout.Options{})
	require.NoError(t, err)
	files, problems := summary(got)
	require.Equal(t, []string{"apps/a.yaml <- links/a.yaml", "apps/b.YML", "apps/nested/deep/c.yaml", "chart/Chart.yaml"}, files)
	require.Equal(t, []string{"links/abs.yaml: symlink leads outside the checkout", "links/out.yaml: symlink leads outside the checkout"}, problems)
}

func TestReadCancelled(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.yaml": "a: 1\n", "b/c.yaml": "->../a.yaml"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := checkout.Read(ctx, openDir(t, root), checkout.Options{})
	require.ErrorIs(t, err, context.Canceled)
}

// TestSelect: paths narrow what was read to a subset of the same files,
// resolved inside the checkout.
func TestSelect(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"p/x.yaml": "a: 1\n"})
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"config/policies/p.yaml": "a: 1\n", "config/policies/q.yml": "a: 1\n", "config/other.yaml": "a: 1\n",
		"apps/a.yaml": "a: 1\n", "apps/bad.yaml": "->../../nowhere.yaml", "apps/shared.yaml": "->../config/other.yaml",
		"policies": "->config/policies", "escape": "->" + filepath.Join(outside, "p"), "apps/up": "->..", "out": "->..",
		".hidden/p.yaml": "a: 1\n", "chart/Chart.yaml": "name: c\n", "chart/templates/t.yaml": "a: 1\n",
		"README.md": "# hi\n",
	})
	all, err := checkout.Read(context.Background(), openDir(t, root), checkout.Options{})
	require.NoError(t, err)
	tests := []struct {
		name     string
		paths    []string
		files    []string
		problems []string
		err      string
	}{
		{
			name: "none selects all",
			files: []string{"apps/a.yaml", "chart/Chart.yaml", "config/other.yaml <- apps/shared.yaml",
				"config/policies/p.yaml", "config/policies/q.yml"},
			problems: []string{"apps/bad.yaml: symlink leads outside the checkout"},
		},
		{
			name: "the root", paths: []string{"."},
			files: []string{"apps/a.yaml", "chart/Chart.yaml", "config/other.yaml <- apps/shared.yaml",
				"config/policies/p.yaml", "config/policies/q.yml"},
			problems: []string{"apps/bad.yaml: symlink leads outside the checkout"},
		},
		{name: "a directory", paths: []string{"config/policies/"}, files: []string{"config/policies/p.yaml", "config/policies/q.yml"}},
		{name: "a symlink to a directory", paths: []string{"policies"}, files: []string{"config/policies/p.yaml", "config/policies/q.yml"}},
		{name: "a file through a symlinked directory", paths: []string{"policies/q.yml"}, files: []string{"config/policies/q.yml"}},
		{
			name: "links in a directory bring their targets", paths: []string{"apps"},
			files:    []string{"apps/a.yaml", "config/other.yaml <- apps/shared.yaml"},
			problems: []string{"apps/bad.yaml: symlink leads outside the checkout"},
		},
		{name: "several, once each", paths: []string{"config", "policies", "config/other.yaml"}, files: []string{"config/other.yaml <- apps/shared.yaml", "config/policies/p.yaml", "config/policies/q.yml"}},
		{name: "not YAML selects nothing", paths: []string{"README.md"}},
		{name: "a symlink back to the root", paths: []string{"apps/up/config/other.yaml"}, files: []string{"config/other.yaml <- apps/shared.yaml"}},
		{name: "above the root", paths: []string{"../elsewhere"}, err: `path "../elsewhere" must be relative to the checkout and stay inside it`},
		{name: "absolute", paths: []string{"/etc"}, err: `path "/etc" must be relative to the checkout and stay inside it`},
		{name: "a symlink leading outside", paths: []string{"escape"}, err: `path "escape" must be relative to the checkout and stay inside it: symlink leads outside the checkout`},
		{name: "a symlink above the root", paths: []string{"out/x"}, err: `path "out/x" must be relative to the checkout and stay inside it: symlink leads outside the checkout`},
		{name: "missing", paths: []string{"nope"}, err: `path "nope": statat nope: no such file or directory`},
		{name: "a dot directory", paths: []string{".hidden"}, err: `path ".hidden": inside a directory that is not read`},
		{name: "a chart's templates", paths: []string{"chart/templates/t.yaml"}, err: `path "chart/templates/t.yaml": inside a directory that is not read`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := all.Select(tt.paths...)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			files, problems := summary(got)
			require.Equal(t, tt.files, files)
			require.Equal(t, tt.problems, problems)
		})
	}
}

func TestSelectWithoutTree(t *testing.T) {
	// Select on a tree by hand has nothing to resolve with: paths are
	// taken as they are written, and still refused when they leave.
	files := &checkout.Files{Files: []checkout.File{{Path: "a/b.yaml"}, {Path: "c.yaml"}}}
	got, err := files.Select("a")
	require.NoError(t, err)
	require.Equal(t, []checkout.File{{Path: "a/b.yaml"}}, got.Files)
	_, err = files.Select("a/../..")
	require.EqualError(t, err, `path "a/../.." must be relative to the checkout and stay inside it`)
}
