package scm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// TestKeyFilesAreBounded: the signing key and a GitHub App's key are read
// whole; a device, a FIFO or a huge file is refused at once, naming the
// file. Before, /dev/zero as the App's key filled memory (23.6 GB
// unconfined) and as the signing key spun for ever.
func TestKeyFilesAreBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	huge := filepath.Join(dir, "huge.pem")
	require.NoError(t, os.WriteFile(huge, []byte(strings.Repeat("-----BEGIN RSA PRIVATE KEY-----\n", 40000)), 0o600))
	tests := []struct{ name, path, want string }{
		{"a device", "/dev/zero", "read /dev/zero: not a regular file"},
		{"a FIFO", fifo, "read " + fifo + ": not a regular file"},
		{"a huge file", huge, "read " + huge + ": too large: more than 1 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := scm.ReadSigningKey(tt.path)
			require.EqualError(t, err, "signing key: "+tt.want)
			_, err = scm.NewGitHub(context.Background(), scm.GitHubConfig{Owner: "acme", Repo: "gitops", AppID: 7, InstallationID: 9, PrivateKeyFile: tt.path,
				BaseURL: "http://127.0.0.1:1/api/v3/"})
			require.EqualError(t, err, "github: GitHub App 7: private key: "+tt.want)
			require.Less(t, time.Since(start), 5*time.Second)
		})
	}
}
