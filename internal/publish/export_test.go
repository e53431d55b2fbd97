package publish

import (
	"time"

	"github.com/gpu-rightsizing/recommender/internal/plan"
)

// Exported for the external tests.
var (
	BranchName = branchName
	Cell       = cell
	Title      = title
	AskedIn    = askedIn
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

// BodyRead renders a change set's body as a run does, with usage read
// from source at now, but for the fingerprint, which needs the edited
// files.
func BodyRead(cs plan.ChangeSet, source string, now time.Time) (string, error) {
	mk := marker{Set: cs.Key, Fingerprint: "sha256:0", Recommended: recommended(cs), Current: current(cs)}
	for _, d := range cs.Decisions {
		mk.Files = append(mk.Files, d.Workload.File)
	}
	return body(cs, mk, bodyOptions{DeclinePercent: 10, Source: source, Now: now})
}

// BodyAt renders a change set's body as BodyRead does, with the source's
// label matcher and the tool's version.
func BodyAt(cs plan.ChangeSet, matcher, version string) (string, error) {
	return body(cs, marker{Set: cs.Key, Fingerprint: "sha256:0"}, bodyOptions{DeclinePercent: 10, Source: "a test", Matcher: matcher, Version: version})
}

// BodyWith renders a change set's body with what the fleet report found
// of its workloads, and the warnings about them.
func BodyWith(cs plan.ChangeSet, findings, warnings map[string][]string) (string, error) {
	return body(cs, marker{Set: cs.Key, Fingerprint: "sha256:0"}, bodyOptions{DeclinePercent: 10, Source: "a test",
		Findings: findings, Warnings: warnings})
}
