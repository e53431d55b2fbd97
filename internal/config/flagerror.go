package config

import (
	"fmt"
	"strings"
)

// FlagError is a mistake in a setting, named by its flag in backticks
// (`--repo`): a usage mistake, told with where to read about the flags.
// Effective.Notes says where each flag it names got its value.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// FlagErrorf is a FlagError with fmt.Errorf's message.
func FlagErrorf(format string, args ...any) error {
	return &FlagError{fmt.Errorf(format, args...)}
}

// OneOf says which values a setting takes, for a check's message: "a, b
// or c"; the empty value, a setting's "none", is left out.
func OneOf(values []string) string {
	var quoted []string
	for _, v := range values {
		if v != "" {
			quoted = append(quoted, v)
		}
	}
	if len(quoted) < 2 {
		return strings.Join(quoted, "")
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}
