package publish

import "github.com/gpu-rightsizing/recommender/internal/plan"

// Exported for the external tests.
var (
	BranchName = branchName
	Cell       = cell
)

// MarkerSet is the change set named by a body's marker.
func MarkerSet(body string) (string, bool) {
	m, ok := markerOf(body)
	return m.Set, ok
}

// Body renders a change set's body with a marker naming it.
func Body(cs plan.ChangeSet) (string, error) {
	return body(cs, marker{Set: cs.Key, Fingerprint: "sha256:0"}, bodyOptions{DeclinePercent: 10, Source: "a test"})
}
