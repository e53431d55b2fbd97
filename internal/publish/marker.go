package publish

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// marker is what the tool hides in the body of its pull requests, to know
// them again: which change set, the fingerprint of what it proposed, and
// the recommended values, which a declined pull request is compared with.
type marker struct {
	Set         string             `json:"set"`
	Fingerprint string             `json:"fingerprint"`
	Recommended map[string]float64 `json:"recommended"`
	// Current is each workload's value when the change was proposed: with
	// Recommended, the direction a person declined.
	Current map[string]float64 `json:"current,omitempty"`
	// Urgent marks a change whose title says so.
	Urgent bool `json:"urgent,omitempty"`
	// Files are the files the change edits.
	Files []string `json:"files,omitempty"`
	// Autoclosed marks a pull request the tool closed itself, because its
	// change was no longer needed: closed, but not declined by a person.
	Autoclosed bool `json:"autoclosed,omitempty"`
}

const markerPrefix = "<!-- gpu-rightsizing "

var markerRE = regexp.MustCompile(`<!-- gpu-rightsizing (\{[^\n]*\}) -->`)

func (m marker) encode() (string, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("marker: %w", err)
	}
	// Keep the HTML comment well-formed whatever the set key holds.
	return markerPrefix + strings.ReplaceAll(string(b), "--", `-\u002d`) + " -->", nil
}

// markerOf reads the marker of a pull request's body; ok is false for a
// pull request the tool did not open (or whose marker a person removed).
func markerOf(body string) (marker, bool) {
	// The tool writes its marker last; a person's text above it (or a
	// quoted marker) must not stand in for it.
	all := markerRE.FindAllStringSubmatch(body, -1)
	if len(all) == 0 {
		return marker{}, false
	}
	m := all[len(all)-1]
	var mk marker
	if err := json.Unmarshal([]byte(m[1]), &mk); err != nil || mk.Fingerprint == "" {
		return marker{}, false
	}
	return mk, true
}

// withMarker replaces the marker in body.
func withMarker(body string, m marker) (string, error) {
	enc, err := m.encode()
	if err != nil {
		return "", err
	}
	locs := markerRE.FindAllStringIndex(body, -1)
	if len(locs) == 0 {
		return body + "\n" + enc + "\n", nil
	}
	loc := locs[len(locs)-1]
	return body[:loc[0]] + enc + body[loc[1]:], nil
}

// fingerprintTrailer is the trailer of the tool's commits that records
// the fingerprint of the change the branch holds.
const fingerprintTrailer = "Gpu-Rightsizing-Fingerprint"

// trailer reads the fingerprint trailer of a commit message, "" when it
// has none.
func trailer(msg string) string {
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(lines[i], fingerprintTrailer+": "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// fingerprint identifies what a change set proposes on its base: the
// recommendation and the exact bytes of every file it writes. The same
// fingerprint means nothing to push or edit; a base that changed a file
// under the change changes it, and so regenerates the branch.
func fingerprint(cs plan.ChangeSet, files []scm.File) string {
	h := sha256.New()
	fmt.Fprintf(h, "set %q\n", cs.Key)
	for _, d := range cs.Decisions {
		fmt.Fprintf(h, "decision %s %s %s %v\n", d.Workload.Ref, d.Action, d.Recommended.Form, d.Recommended.GPUs)
	}
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b scm.File) int { return strings.Compare(a.Path, b.Path) })
	for _, f := range sorted {
		sum := sha256.Sum256(f.Data)
		fmt.Fprintf(h, "file %q %x\n", f.Path, sum)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
