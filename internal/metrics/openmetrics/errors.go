package openmetrics

import "fmt"

// A ParseError reports where a recorded file breaks the OpenMetrics text
// format, or the stricter rules of a recording (a timestamp on every
// sample).
type ParseError struct {
	File string
	Line int
	// Col is the 1-based byte column of the fault, or 0 when the line as a
	// whole is at fault.
	Col int
	Msg string
}

func (e *ParseError) Error() string {
	if e.Col > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}
