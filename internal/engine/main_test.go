package engine_test

import (
	"flag"
	"os"
	"testing"
)

// TestMain raises rapid's default number of checks: the invariants are
// cheap to check and only some generated inputs reach a scale-back, so 100
// checks would leave them thinly tested. -rapid.checks still overrides.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		if err := flag.Set("rapid.checks", "500"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
