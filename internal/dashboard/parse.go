package dashboard

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/publish"
)

// ticked is a ticked checkbox of the tool's, at the start of a line as a
// list item, as GitHub and GitLab write it when a person ticks it: "[x]"
// or "[X]". A box the tool did not write (no marker right after it) asks
// nothing.
var ticked = regexp.MustCompile(`^[ \t]{0,3}[-*+][ \t]+\[[xX]\][ \t]+<!-- gpu-rightsizing-dashboard:(retry|rebase|open)=([^ \t<>]*) -->`)

// Parse reads what a person asked for by ticking the dashboard's boxes,
// from the body as they left it. It never fails: a box whose marker was
// mangled asks nothing, and the next render writes it afresh.
func Parse(body string) publish.Asked {
	var a publish.Asked
	add := func(m *map[string]bool, key string) {
		if *m == nil {
			*m = map[string]bool{}
		}
		(*m)[key] = true
	}
	for line := range strings.Lines(body) {
		m := ticked.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
		if m == nil {
			continue
		}
		key, err := url.QueryUnescape(m[2])
		if err != nil || key == "" {
			continue
		}
		switch Verb(m[1]) {
		case Retry:
			add(&a.Retry, key)
		case Rebase:
			add(&a.Rebase, key)
		case Open:
			add(&a.Open, key)
		}
	}
	return a
}

// Empty reports whether a asks for nothing.
func Empty(a publish.Asked) bool { return len(a.Retry)+len(a.Rebase)+len(a.Open) == 0 }
