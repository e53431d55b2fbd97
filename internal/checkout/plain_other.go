//go:build !linux

package checkout

import "os"

// openPlain is Linux's fast open of a name without symlinks; elsewhere
// every open takes the Root's way.
func openPlain(*os.File, string) (*os.File, bool) { return nil, false }

// readPlain is Linux's read of a name without symlinks on the bare
// descriptor; elsewhere it never reads.
func readPlain(*os.File, string, int64) ([]byte, bool, error) { return nil, false, nil }
