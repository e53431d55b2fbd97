package localfile_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/localfile"
)

// TestRead: a regular file within the bound is read; a device, a FIFO
// with no writer, a directory or a file past the bound is refused at
// once, naming the file and never its content.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(ok, []byte("-----BEGIN-----\n"), 0o600))
	long := filepath.Join(dir, "long")
	require.NoError(t, os.WriteFile(long, bytes.Repeat([]byte("s3cret"), 200<<10), 0o600))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(ok, link))

	b, err := localfile.Read(ok, localfile.MaxKey)
	require.NoError(t, err)
	require.Equal(t, "-----BEGIN-----\n", string(b))
	b, err = localfile.Read(link, localfile.MaxKey)
	require.NoError(t, err, "a secret's mounted link leads to a regular file")
	require.Equal(t, "-----BEGIN-----\n", string(b))

	tests := []struct{ name, path, want string }{
		{"a device", "/dev/zero", "read /dev/zero: not a regular file"},
		{"a FIFO", fifo, "read " + fifo + ": not a regular file"},
		{"a directory", dir, "read " + dir + ": not a regular file"},
		{"past the bound", long, "read " + long + ": too large: more than 1 MiB"},
		{"missing", filepath.Join(dir, "no"), "read " + filepath.Join(dir, "no") + ": no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := localfile.Read(tt.path, localfile.MaxKey)
			require.EqualError(t, err, tt.want)
			require.Less(t, time.Since(start), 5*time.Second)
		})
	}
}

func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tok, []byte("  s3cret-token\n"), 0o600))
	long := filepath.Join(dir, "long")
	require.NoError(t, os.WriteFile(long, bytes.Repeat([]byte("a"), 100<<10), 0o600))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte(" \n"), 0o600))

	got, err := localfile.ReadSecret(tok)
	require.NoError(t, err)
	require.Equal(t, "s3cret-token", got)
	for path, want := range map[string]string{
		"/dev/zero": "read /dev/zero: not a regular file",
		long:        "read " + long + ": more than 64 KiB, not a token or password",
		empty:       empty + " is empty",
	} {
		_, err := localfile.ReadSecret(path)
		require.EqualError(t, err, want)
	}
}

// TestKubeconfig: a kubeconfig is loaded as client-go loads it — its
// current context, a path in it relative to its own directory — and one
// that is a device or too large is refused, naming it.
