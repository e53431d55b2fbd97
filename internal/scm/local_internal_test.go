package scm

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzFromMarkdown: any text read back as a local record never panics,
// and a record the tool writes (a title of one line, branch and base
// without spaces) reads back as it was written.
func FuzzFromMarkdown(f *testing.F) {
	f.Add("t", "gpu-rightsizing/a", "main", "open", "body\n<!-- m -->\n")
	f.Add("Upsize the GPU of a/b: 0.50 → 0.72", "x", "release", "closed", "")
	f.Add("# t", "b", "m", "merged", "\n\n---\nfits now\n")
	f.Fuzz(func(t *testing.T, title, branch, base, state, body string) {
		fromMarkdown(title + "\n" + body) // no panic on anything
		if strings.ContainsAny(title, "\r\n") || branch == "" || base == "" || strings.ContainsAny(branch+base, " \t\r\n\v\f") ||
			strings.Contains(branch+base, "-->") || (state != "open" && state != "closed" && state != "merged") {
			return
		}
		md := fmt.Sprintf("# %s\n\n<!-- #%d %s, branch %s into %s -->\n\n%s", title, 7, state, branch, base, body)
		got, ok := fromMarkdown(md)
		want := PullRequest{Number: 7, State: State(state), Branch: branch, Base: base, Title: title, Body: body}
		if !ok || got.Number != want.Number || got.State != want.State || got.Branch != want.Branch || got.Base != want.Base ||
			got.Title != want.Title || got.Body != want.Body {
			t.Fatalf("read back %+v (%v), want %+v", got, ok, want)
		}
	})
}
