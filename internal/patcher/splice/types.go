package splice

import (
	"errors"
)

// Sentinel errors of the text engine.
var (
	// ErrInvalidYAML: the file does not parse.
	ErrInvalidYAML = errors.New("invalid YAML")
	// ErrConflictMarkers: the file contains git merge-conflict markers.
	ErrConflictMarkers = errors.New("file contains merge-conflict markers")
	// ErrDuplicateKey: a mapping of the edited document has a key twice.
	ErrDuplicateKey = errors.New("duplicate mapping key")
	// ErrAlias: an anchor, alias or merge key lies on the edit path;
	// editing through it would change other places too.
	ErrAlias = errors.New("anchor, alias or merge key on the edit path")
	// ErrTemplate: the value is written through a Helm/Go template.
	ErrTemplate = errors.New("value is a template expression")
	// ErrUnsupported: the source has a shape the editor does not handle
	// safely (odd line breaks, a key sharing its line with a dash, ...).
	ErrUnsupported = errors.New("unsupported source layout")
	// ErrVerify: after splicing, the file did not parse to exactly the
	// intended result.
	ErrVerify = errors.New("edit verification failed")
)

// Splice is one byte-level replacement in a file's original text.
type Splice struct {
	Off, Len int
	Text     string
}

// Change is one field a step changed: its path and the values before
// and after ("" for an addition or a removal). The caller says for which
// workload and why.
type Change struct {
	Field    string
	Old, New string
}
