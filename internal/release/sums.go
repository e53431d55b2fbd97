package release

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Checksums writes the SHA-256 of each file in dir named by names, in the
// format `sha256sum -c` reads ("<hex>  <name>"), sorted by name.
func Checksums(w io.Writer, dir string, names []string) error {
	for _, name := range slices.Sorted(slices.Values(names)) {
		sum, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("checksums: %w", err)
		}
		if _, err := fmt.Fprintf(w, "%s  %s\n", sum, name); err != nil {
			return err
		}
	}
	return nil
}

// VerifyChecksums checks every line of a checksums file against the files
// beside it in dir, and returns the names it listed. A line that does not
// parse, a name that leaves dir and a sum that differs are errors naming
// the line.
func VerifyChecksums(sums, dir string) ([]string, error) {
	f, err := os.Open(sums)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(want) != 64 || name == "" || !filepath.IsLocal(name) {
			return nil, fmt.Errorf("%s:%d: want '<sha256>  <name>'", sums, n)
		}
		got, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", sums, n, err)
		}
		if got != want {
			return nil, fmt.Errorf("%s:%d: %s: sha256 %s, listed %s", sums, n, name, got, want)
		}
		names = append(names, name)
	}
	return names, sc.Err()
}
