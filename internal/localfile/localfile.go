// Package localfile reads the files the tool is named by its flags and
// settings: tokens and passwords, private keys, certificates, a
// kubeconfig. Each is read whole into memory, so each is read the one
// safe way: opened without blocking (a FIFO never hangs a run), refused
// unless it is a regular file (a Kubernetes secret's mounted link leads to
// one; /dev/zero is none), and refused past a size bound far above what
// such a file holds. An error names the file, never its content.
package localfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// Bounds of what is read.
const (
	// MaxSecret bounds a token or password file.
	MaxSecret = 64 << 10
	// MaxKey bounds a private key, a certificate or a bundle of them
	// (all of Mozilla's roots take about 220 KB), or a known_hosts file.
	MaxKey = 1 << 20
	// MaxConfig bounds a kubeconfig, which may embed certificates for
	// many clusters.
	MaxConfig = 4 << 20
)

// ErrTooLarge: a file past its bound.
var ErrTooLarge = errors.New("too large")

// Read reads the regular file at path, at most max bytes.
func Read(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, cause(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, cause(err))
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, cause(err))
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("read %s: %w: more than %s", path, ErrTooLarge, size(max))
	}
	return b, nil
}

// ReadSecret reads a token or password file, trimmed: Read within
// MaxSecret, and not empty. Every secret the tool reads from a file goes
// through it.
func ReadSecret(path string) (string, error) {
	b, err := Read(path, MaxSecret)
	if errors.Is(err, ErrTooLarge) {
		return "", fmt.Errorf("read %s: more than %s, not a token or password", path, size(MaxSecret))
	}
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

// cause is a path error's cause: the message names the path once.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func size(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
