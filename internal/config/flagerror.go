package config

import "fmt"

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
