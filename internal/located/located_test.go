package located_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/located"
)

func TestError(t *testing.T) {
	cause := errors.New("missing")
	tests := []struct {
		name string
		err  located.Error
		want string
	}{
		{name: "everything", err: located.Error{File: "p.yaml", Line: 3, Column: 5, Field: "spec.x", Err: cause}, want: "p.yaml:3:5: spec.x: missing"},
		{name: "no column", err: located.Error{File: "p.yaml", Line: 3, Field: "spec.x", Err: cause}, want: "p.yaml:3: spec.x: missing"},
		{name: "no field", err: located.Error{File: "x.om", Line: 1, Column: 51, Err: cause}, want: "x.om:1:51: missing"},
		{name: "file only", err: located.Error{File: "a/b.yaml", Err: cause}, want: "a/b.yaml: missing"},
		{name: "file and field", err: located.Error{File: "a.yaml", Field: "metadata.name", Err: cause}, want: "a.yaml: metadata.name: missing"},
		{name: "a column without a line locates nothing", err: located.Error{File: "a.yaml", Column: 4, Err: cause}, want: "a.yaml: missing"},
		{name: "no file", err: located.Error{Field: "spec", Err: cause}, want: "spec: missing"},
		{name: "a line without a file", err: located.Error{Line: 2, Err: cause}, want: ":2: missing"},
		{name: "no cause", err: located.Error{File: "a.yaml", Line: 2, Field: "kind"}, want: "a.yaml:2: kind"},
		{name: "nothing", err: located.Error{}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.err.Error())
		})
	}
}

// TestErrorFound: a caller finds the place with errors.As and the cause
// with errors.Is, through any wrapping.
func TestErrorFound(t *testing.T) {
	err := fmt.Errorf("reading policies: %w", &located.Error{File: "p.yaml", Line: 2, Err: fmt.Errorf("open: %w", fs.ErrPermission)})
	var le *located.Error
	require.ErrorAs(t, err, &le)
	require.Equal(t, "p.yaml", le.File)
	require.Equal(t, 2, le.Line)
	require.ErrorIs(t, err, fs.ErrPermission)
}
