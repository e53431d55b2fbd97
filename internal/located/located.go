// Package located is the one error type for a problem found at a place
// in an input file: a policy's field, a config key, a line of a metrics
// recording, a file the checkout could not read. Every reader reports
// such problems with it, so that they read alike (file:line:column:
// field: cause) and a caller finds where with errors.As, never by taking
// a message apart. Nearest is the one rule for the name a misspelt field
// or key meant, so that every reader's hint reads alike too.
package located

import (
	"strconv"
	"strings"
)

// Error is a problem at a place in an input. Any part of the place may be
// unknown, and is then left out of the message.
type Error struct {
	// File is slash-separated and relative to the checkout or as the user
	// named it.
	File string
	// Line and Column are 1-based; 0 means unknown. A column without a
	// line locates nothing and is not shown.
	Line, Column int
	// Field is the path of the field or key, e.g.
	// spec.metrics.compute.upsize.metricsWindow.
	Field string
	Err   error
}

// Error renders file:line:column: field: cause, leaving out the parts that
// are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Column))
		}
	}
	if e.Field != "" {
		sep(&b)
		b.WriteString(e.Field)
	}
	if e.Err != nil {
		sep(&b)
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// sep separates a part from what precedes it, if anything does.
func sep(b *strings.Builder) {
	if b.Len() > 0 {
		b.WriteString(": ")
	}
}
