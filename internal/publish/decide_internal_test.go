package publish

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// TestDecidePublish is the pull-request lifecycle of one change set, one
// row per case of the README's table, with no forge: the fake-forge tests
// prove the acting, this proves the deciding.
func TestDecidePublish(t *testing.T) {
	want := marker{Set: "inference/Deployment/chat", Fingerprint: "f2", Recommended: map[string]float64{"chat": 0.72}, Current: map[string]float64{"chat": 0.5}}
	body := func(m marker) string {
		b, err := withMarker("body", m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	with := func(f func(*marker)) marker { m := want; f(&m); return m }
	pr := func(n int, st scm.State, m marker) *scm.PullRequest {
		return &scm.PullRequest{Number: n, State: st, Body: body(m)}
	}
	// labelled is an open pull request titled title with labels.
	labelled := func(title string, labels ...string) *scm.PullRequest {
		p := pr(4, scm.Open, want)
		p.Title, p.Labels = title, labels
		return p
	}
	tests := []struct {
		name string
		seen published
		want action
		// detail is a part of the action's detail.
		detail string
	}{
		{name: "nothing yet: open",
			seen: published{want: want},
			want: action{outcome: Opened, push: true, open: true}},
		{name: "open, branch and body hold the change: unchanged",
			seen: published{want: want, current: pr(4, scm.Open, want), head: branchHead{fingerprint: "f2"}},
			want: action{outcome: Unchanged}},
		{name: "open, the recommendation changed: branch pushed and body edited",
			seen: published{want: want, current: pr(4, scm.Open, with(func(m *marker) { m.Fingerprint = "f1" })), head: branchHead{fingerprint: "f1"}},
			want: action{outcome: Updated, push: true, edit: true}},
		{name: "open, a run died between push and edit: only the body",
			seen: published{want: want, current: pr(4, scm.Open, with(func(m *marker) { m.Fingerprint = "f1" })), head: branchHead{fingerprint: "f2"}},
			want: action{outcome: Updated, edit: true}},
		{name: "open, the body says the tool closed it once: edited again",
			seen: published{want: want, current: pr(4, scm.Open, with(func(m *marker) { m.Autoclosed = true })), head: branchHead{fingerprint: "f2"}},
			want: action{outcome: Updated, edit: true}},
		{name: "open, labels of another direction: they follow the change, nothing else",
			seen: published{want: want, current: labelled("Scale back", "gpu-rightsizing", "upsize", "urgent", "team-ml"), head: branchHead{fingerprint: "f2"},
				labels: []string{"gpu-rightsizing", "scaleBack"}},
			want: action{outcome: Updated, addLabels: []string{"scaleBack"}, removeLabels: []string{"upsize", "urgent"}}, detail: "labels: +scaleBack -upsize -urgent"},
		{name: "open, the upsize became urgent: title and labels, no push",
			seen: published{want: with(func(m *marker) { m.Urgent = true }), current: labelled("Upsize", "gpu-rightsizing", "upsize"), head: branchHead{fingerprint: "f2"},
				labels: []string{"gpu-rightsizing", "upsize", "urgent"}},
			want: action{outcome: Updated, edit: true, addLabels: []string{"urgent"}}},
		{name: "open, title and labels as they should be: unchanged",
			seen: published{want: want, current: labelled("Upsize", "gpu-rightsizing", "upsize", "someone's"), head: branchHead{fingerprint: "f2"},
				labels: []string{"gpu-rightsizing", "upsize"}},
			want: action{outcome: Unchanged}},
		{name: "open, a person pushed and labels differ: kept, labels too",
			seen: published{want: want, current: labelled("Upsize", "upsize"), head: branchHead{who: "Ana"}, labels: []string{"scaleBack"}},
			want: action{outcome: Kept}, detail: "Ana pushed"},
		{name: "open, a person pushed to the branch: kept",
			seen: published{want: want, current: pr(4, scm.Open, want), head: branchHead{who: "Ana"}},
			want: action{outcome: Kept}, detail: "Ana pushed to the branch, so the tool leaves it alone"},
		{name: "open, a workload of it outside the run's filter: kept, not updated to drop it",
			seen: published{want: want, current: pr(4, scm.Open, with(func(m *marker) { m.Fingerprint = "f1" })), head: branchHead{fingerprint: "f1"},
				excluded: []string{"inference/Deployment/embed"}},
			want: action{outcome: Kept}, detail: "inference/Deployment/embed: outside this run's filter"},
		{name: "open, a rebase asked on the dashboard: pushed afresh, the body left as it is",
			seen: published{want: want, current: pr(4, scm.Open, want), head: branchHead{fingerprint: "f2"}, rebase: true},
			want: action{outcome: Updated, push: true}, detail: "as asked on the dashboard"},
		{name: "open, a rebase asked in the pull request's body: pushed afresh, the body written with the box unticked",
			seen: published{want: want, current: pr(4, scm.Open, want), head: branchHead{who: "a person"}, rebase: true, untick: true},
			want: action{outcome: Updated, push: true, edit: true}, detail: "as asked in the pull request"},
		{name: "open, a person pushed and a rebase is asked: pushed over the person's commit",
			seen: published{want: want, current: pr(4, scm.Open, want), head: branchHead{who: "Ana"}, rebase: true},
			want: action{outcome: Updated, push: true}},
		{name: "declined, not moved: declined",
			seen: published{want: want, declined: pr(3, scm.Closed, with(func(m *marker) { m.Recommended = map[string]float64{"chat": 0.7} }))},
			want: action{outcome: Declined}, detail: "#3 was closed unmerged; the recommendation has not moved by more than 10% since"},
		{name: "declined, moved by more than the threshold: opened again",
			seen: published{want: want, declined: pr(3, scm.Closed, with(func(m *marker) { m.Recommended = map[string]float64{"chat": 0.6} }))},
			want: action{outcome: Opened, push: true, open: true}},
		{name: "declined, the direction turned: opened again",
			seen: published{want: want, declined: pr(3, scm.Closed, with(func(m *marker) {
				m.Recommended, m.Current = map[string]float64{"chat": 0.7}, map[string]float64{"chat": 0.8}
			}))},
			want: action{outcome: Opened, push: true, open: true}},
		{name: "at a cap: capped",
			seen: published{want: want, capped: "at the cap of open (3) or new (0) pull requests"},
			want: action{outcome: Capped}, detail: "at the cap of open (3)"},
		{name: "no pull request, a person's commit on the branch: kept",
			seen: published{want: want, head: branchHead{who: "Ana"}},
			want: action{outcome: Kept}, detail: "the branch holds a commit by Ana and no open pull request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decidePublish(tt.seen, 10)
			if !strings.Contains(got.detail, tt.detail) {
				t.Fatalf("detail %q, want it to hold %q", got.detail, tt.detail)
			}
			got.detail, got.pr = "", nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// FuzzMarker: the marker and the trailer are read from text a forge and a
// person control. Reading never fails hard, and a marker read is written
// back and read again the same.
func FuzzMarker(f *testing.F) {
	seed, _ := withMarker("a body", marker{Set: "inference/Deployment/chat", Fingerprint: "f", Recommended: map[string]float64{"chat": 0.72}})
	f.Add(seed)
	f.Add("<!-- gpu-rightsizing-recommender {\"set\":\"--\"} -->")
	f.Add("x\nGpu-Rightsizing-Fingerprint: abc\n")
	f.Fuzz(func(t *testing.T, body string) {
		_ = trailer(body)
		m, ok := markerOf(body)
		if !ok {
			return
		}
		again, err := withMarker(body, m)
		if err != nil {
			t.Fatal(err)
		}
		m2, ok := markerOf(again)
		if !ok || m2.Set != m.Set || m2.Fingerprint != m.Fingerprint || m2.Autoclosed != m.Autoclosed {
			t.Fatalf("read %+v, wrote and read %+v", m, m2)
		}
	})
}
