package scm

import (
	"context"
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

// TestLocalKeepsNoBodyItWrote: the pull requests a Local writes are kept
// without their bodies (a run of 10,000 held 29 MB of them), and every
// lookup still returns each body as it was written or last updated.
func TestLocalKeepsNoBodyItWrote(t *testing.T) {
	ctx := context.Background()
	l, err := NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Find(ctx, "none"); err != nil { // a run looks before it writes
		t.Fatal(err)
	}
	want := map[int]string{}
	for i := range 3 {
		pr, err := l.Open(ctx, NewPullRequest{Branch: fmt.Sprintf("b%d", i), Base: "main", Title: "t", Body: strings.Repeat("body ", i+1)})
		if err != nil {
			t.Fatal(err)
		}
		want[pr.Number] = pr.Body
	}
	if err := l.Update(ctx, 2, "t2", "updated"); err != nil {
		t.Fatal(err)
	}
	want[2] = "updated"
	for n, pr := range l.prs {
		if pr.Body != "" {
			t.Errorf("#%d is kept with its body %q", n, pr.Body)
		}
	}
	tests := []struct {
		name string
		list func() ([]PullRequest, error)
	}{
		{"All", l.All},
		{"ListOpen", func() ([]PullRequest, error) { return l.ListOpen(ctx, "b") }},
		{"Find", func() ([]PullRequest, error) {
			var out []PullRequest
			for i := range 3 {
				found, err := l.Find(ctx, fmt.Sprintf("b%d", i))
				out = append(out, found...)
				if err != nil {
					return nil, err
				}
			}
			return out, nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.list()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d pull requests, want %d", len(got), len(want))
			}
			for _, pr := range got {
				if pr.Body != want[pr.Number] {
					t.Errorf("#%d: body %q, want %q", pr.Number, pr.Body, want[pr.Number])
				}
			}
		})
	}
}
