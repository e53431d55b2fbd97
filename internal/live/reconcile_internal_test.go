package live

import (
	"errors"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// TestDecideReconcile is docs/live.md's table of what later runs do, one
// row per transition, with no server: the API-server tests prove the
// executor, this proves the decisions.
func TestDecideReconcile(t *testing.T) {
	mk := Marker{Fraction: Values{Old: "0.30", New: "0.45"}, VLLM: &VLLMValues{Container: "vllm", Values: Values{Old: "0.27", New: "0.40"}},
		PullRequest: "https://forge/pull/7", Number: 7, Branch: "gpu-rightsizing/inference/chat"}
	pr := func(st scm.State) *scm.PullRequest { return &scm.PullRequest{Number: 7, State: st} }
	git := func(f, v string) GitValues { return GitValues{Fraction: f, VLLM: map[string]string{"vllm": v}} }
	ours := seen{marker: mk, live: "0.45", liveVLLM: "0.40", gitOK: true}
	with := func(f func(*seen)) seen { s := ours; f(&s); return s }
	tests := []struct {
		name     string
		seen     seen
		kind     stepKind
		outcome  Outcome // of stepNothing
		fraction string  // released or reverted to
		vllm     string
		detail   string
	}{
		{name: "a marker that does not read: left for a person", seen: seen{markerErr: errors.New("annotation: bad JSON")},
			outcome: Left, detail: "annotation: bad JSON: left for a person"},
		{name: "open: pending", seen: with(func(s *seen) { s.pr = pr(scm.Open) }),
			outcome: Pending, detail: "pull request https://forge/pull/7 is open"},
		{name: "the forge cannot be asked: failed", seen: with(func(s *seen) { s.prErr = errors.New("503") }),
			outcome: Failed, detail: "the state of pull request https://forge/pull/7: 503"},
		{name: "the forge cannot be asked, and someone changed the values: left", seen: with(func(s *seen) { s.prErr = errors.New("503"); s.live = "0.60" }),
			outcome: Left, detail: "the live gpu-fraction is 0.60, not the 0.45 the tool applied"},
		{name: "the pull request is gone: left", seen: ours,
			outcome: Left, detail: "(#7, branch gpu-rightsizing/inference/chat) is not found"},
		{name: "merged, Git holds the live values: released", seen: with(func(s *seen) { s.pr, s.git = pr(scm.Merged), git("0.45", "0.40") }),
			kind: stepRelease, fraction: "0.45", detail: "pull request https://forge/pull/7 merged and Git holds the live values"},
		{name: "merged, Git holds more: released at the tool's values", seen: with(func(s *seen) { s.pr, s.git = pr(scm.Merged), git("0.60", "0.54") }),
			kind: stepRelease, fraction: "0.45", detail: "merged and Git holds the live values"},
		{name: "merged, Git holds less: released, for GitOps to apply Git's", seen: with(func(s *seen) { s.pr, s.git = pr(scm.Merged), git("0.40", "0.36") }),
			kind: stepRelease, fraction: "0.45", detail: `merged and Git holds gpu-fraction "0.40" below the live 0.45; the GitOps controller applies Git's values once the fields are released`},
		{name: "merged, the flag below the live one: released", seen: with(func(s *seen) { s.pr, s.git = pr(scm.Merged), git("0.45", "0.30") }),
			kind: stepRelease, fraction: "0.45", detail: `--gpu-memory-utilization "0.30" in container vllm, below the live 0.40`},
		{name: "merged, the workload gone from Git: left", seen: with(func(s *seen) { s.pr, s.gitOK = pr(scm.Merged), false }),
			outcome: Left, detail: "merged, but the base branch no longer holds the workload"},
		{name: "merged, GitOps synced a later raise: released at the live values", seen: with(func(s *seen) {
			s.pr, s.git, s.live, s.liveVLLM = pr(scm.Merged), git("0.60", "0.54"), "0.60", "0.54"
		}), kind: stepRelease, fraction: "0.60", detail: "merged and the live values are Git's, at least the tool's"},
		{name: "merged, a person set a value Git does not hold: left", seen: with(func(s *seen) { s.pr, s.git, s.live = pr(scm.Merged), git("0.45", "0.40"), "0.60" }),
			outcome: Left, detail: "the live gpu-fraction is 0.60, not the 0.45 the tool applied: someone changed it since"},
		{name: "someone changed the flag: left", seen: with(func(s *seen) { s.pr, s.liveVLLM = pr(scm.Open), "0.50" }),
			outcome: Left, detail: `container vllm: the live --gpu-memory-utilization is "0.50", not the 0.40 the tool applied`},
		{name: "closed, revert off: left and said", seen: with(func(s *seen) { s.pr, s.git = pr(scm.Closed), git("0.30", "0.27") }),
			outcome: Left, detail: "was closed unmerged; the live change (gpu-fraction 0.30 → 0.45) is left (`--live-revert-closed` reverts it)"},
		{name: "closed, revert on: reverted to Git's values now", seen: with(func(s *seen) { s.pr, s.git, s.revertClosed = pr(scm.Closed), git("0.35", "0.31"), true }),
			kind: stepRevert, fraction: "0.35", vllm: "0.31", detail: "pull request https://forge/pull/7 was closed unmerged"},
		{name: "closed, revert on, Git holds at least the live values: released", seen: with(func(s *seen) { s.pr, s.git, s.revertClosed = pr(scm.Closed), git("0.50", "0.45"), true }),
			kind: stepRelease, fraction: "0.45", detail: "was closed unmerged and Git now holds at least the live values"},
		{name: "closed, revert on, the workload gone from Git: left", seen: with(func(s *seen) { s.pr, s.gitOK, s.revertClosed = pr(scm.Closed), false, true }),
			outcome: Left, detail: "closed unmerged, but the base branch no longer holds the workload"},
		{name: "closed, revert on, Git's fraction not one to revert to: left", seen: with(func(s *seen) { s.pr, s.git, s.revertClosed = pr(scm.Closed), git("1", "0.27"), true }),
			outcome: Left, detail: `Git's gpu-fraction "1" is not one to revert to`},
		{name: "closed, revert on, Git's flag not a number: left", seen: with(func(s *seen) { s.pr, s.git, s.revertClosed = pr(scm.Closed), git("0.30", "lots"), true }),
			outcome: Left, detail: `Git's --gpu-memory-utilization in container vllm is "lots", not a value to revert to`},
		{name: "closed, the live values are Git's (a revert died before its release): released", seen: with(func(s *seen) {
			s.pr, s.git, s.live, s.liveVLLM = pr(scm.Closed), git("0.30", "0.27"), "0.30", "0.27"
		}), kind: stepRelease, fraction: "0.30", detail: "was closed unmerged and the live values are Git's"},
		{name: "closed, a person reverted to the marker's old values: released", seen: with(func(s *seen) {
			s.pr, s.git, s.live, s.liveVLLM = pr(scm.Closed), git("0.35", "0.31"), "0.30", "0.27"
		}), kind: stepRelease, fraction: "0.30", detail: "was closed unmerged and the live values are Git's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := decideReconcile(tt.seen)
			if st.kind != tt.kind {
				t.Fatalf("kind %d, want %d (%+v)", st.kind, tt.kind, st)
			}
			if tt.kind == stepNothing && st.outcome != tt.outcome {
				t.Fatalf("outcome %s, want %s: %s", st.outcome, tt.outcome, st.detail)
			}
			if st.fraction != tt.fraction || st.vllm != tt.vllm {
				t.Fatalf("values %s/%s, want %s/%s", st.fraction, st.vllm, tt.fraction, tt.vllm)
			}
			if !strings.Contains(st.detail, tt.detail) {
				t.Fatalf("detail %q, want it to hold %q", st.detail, tt.detail)
			}
		})
	}
}

// TestPlanLive: the rules of an urgent upsize, decided from the target and
// the live Deployment alone (docs/live.md, "When a change goes live").
func TestPlanLive(t *testing.T) {
	o := Options{Namespaces: []string{"inference"}, MaxChanges: 3}
	target := Target{Namespace: "inference", Name: "chat", Kind: "Deployment", Fraction: Values{Old: "0.30", New: "0.45"},
		VLLM: &VLLMValues{Container: "vllm", Values: Values{Old: "0.27", New: "0.40"}}, Ceiling: 1, MaxPercent: 200,
		PullRequest: "https://forge/pull/7", Number: 7, Branch: "gpu-rightsizing/inference/chat"}
	dep := func(fraction, flag string, annotations map[string]string) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Name, d.Namespace, d.Annotations = "chat", "inference", annotations
		d.Spec.Template.Annotations = map[string]string{"gpu-fraction": fraction}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "vllm", Args: []string{"--gpu-memory-utilization=" + flag}}}
		return d
	}
	marker := func(newF, newV string) map[string]string {
		m := Marker{Fraction: Values{Old: "0.30", New: newF}, VLLM: &VLLMValues{Container: "vllm", Values: Values{Old: "0.27", New: newV}},
			Branch: "b", Number: 6, Owners: []string{"kustomize-controller"}}
		s, _ := m.encode()
		return map[string]string{MarkerAnnotation: s}
	}
	t.Run("admitted or not", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			t    func(Target) Target
			want string
		}{
			{"a Deployment in an allowed namespace with a pull request", func(t Target) Target { return t }, ""},
			{"a CronJob", func(t Target) Target { t.Kind = "CronJob"; return t }, "a CronJob is never changed live"},
			{"another namespace", func(t Target) Target { t.Namespace = "prod"; return t }, "namespace prod is not one live changes may touch"},
			{"no pull request", func(t Target) Target { t.PullRequest = ""; return t }, "no pull request carries the change"},
			{"whole GPUs", func(t Target) Target { t.Fraction.New = "1"; return t }, "only a gpu-fraction is changed live"},
			{"above the ceiling", func(t Target) Target { t.Ceiling = 0.4; return t }, "0.45 is above the ceiling"},
			{"a step past maxPercent", func(t Target) Target { t.MaxPercent = 120; return t }, "more than maxPercent 120% of 0.30"},
		} {
			got := admit(tt.t(target), o)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
			}
		}
	})
	for _, tt := range []struct {
		name    string
		dep     *appsv1.Deployment
		outcome Outcome // "" when planned
		want    string  // in stop, or in a warning
		fields  int
		owners  []string
	}{
		{name: "Git's values live: planned", dep: dep("0.30", "0.27", nil), fields: 2},
		{name: "a person changed the fraction: left", dep: dep("0.35", "0.27", nil), outcome: Left, want: "the live gpu-fraction is 0.35, Git's 0.30"},
		{name: "a person changed the flag: left", dep: dep("0.30", "0.50", nil), outcome: Left, want: "the live --gpu-memory-utilization is 0.50, Git's 0.27"},
		{name: "already as much live: never downsized", dep: dep("0.45", "0.27", marker("0.45", "0.27")), outcome: Left, want: "already holds the recommended 0.45"},
		{name: "the tool's earlier change builds on: planned, its owners kept", dep: dep("0.40", "0.36", marker("0.40", "0.36")), fields: 2, owners: []string{"kustomize-controller"}},
		{name: "a marker a person overrode: left", dep: dep("0.30", "0.27", marker("0.40", "0.36")), outcome: Left, want: "a person changed it since our live change"},
		{name: "an unreadable live fraction: left", dep: dep("lots", "0.27", nil), outcome: Left, want: "the live Deployment's gpu-fraction"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := planLive(target, tt.dep)
			if p.outcome != tt.outcome || !strings.Contains(p.stop+strings.Join(p.warnings, ";"), tt.want) {
				t.Fatalf("got %q %q %v, want %q %q", p.outcome, p.stop, p.warnings, tt.outcome, tt.want)
			}
			if tt.outcome == "" && (len(p.fields) != tt.fields || !slices.Equal(p.marker.Owners, tt.owners)) {
				t.Fatalf("fields %v owners %v", p.fields, p.marker.Owners)
			}
		})
	}
	t.Run("a lower flag is never applied live, the fraction still goes up", func(t *testing.T) {
		tg := target
		tg.VLLM = &VLLMValues{Container: "vllm", Values: Values{Old: "0.27", New: "0.20"}}
		p := planLive(tg, dep("0.30", "0.27", nil))
		if p.stop != "" || p.args != nil || p.marker.VLLM != nil || len(p.warnings) != 1 || !strings.Contains(p.warnings[0], "never lowered live") {
			t.Fatalf("%+v", p)
		}
	})
}

// FuzzLiveMarker: the marker is read from a Deployment's annotation,
// which anyone with patch rights can write. Reading never fails hard, and
// a marker read is written and read again the same.
func FuzzLiveMarker(f *testing.F) {
	m := Marker{Fraction: Values{Old: "0.30", New: "0.45"}, Branch: "b", Number: 7, Owners: []string{"kustomize-controller"}}
	s, _ := m.encode()
	f.Add(s)
	f.Add(`{"gpuFraction":{"new":"0.4"},"branch":"x","vllm":null}`)
	f.Fuzz(func(t *testing.T, v string) {
		got, ok, err := markerOf(map[string]string{MarkerAnnotation: v})
		if !ok || err != nil {
			return
		}
		enc, err := got.encode()
		if err != nil {
			t.Fatal(err)
		}
		again, _, err := markerOf(map[string]string{MarkerAnnotation: enc})
		if err != nil || again.Fraction != got.Fraction || again.Branch != got.Branch || again.Number != got.Number {
			t.Fatalf("read %+v, wrote and read %+v (%v)", got, again, err)
		}
	})
}
