// Package summary is what one run did, told once for every reader: the
// JSON and Markdown of `run --output`, the run's metrics, the Kubernetes
// Event and the webhook's message all render the same Summary. It is
// built from the plan, the publishing report and the live stage's
// results as far as the run got, and reads no clock and writes nothing
// but its renderings.
package summary

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
)

// Outcome is how a run ended, as its exit code tells it.
type Outcome string

const (
	// NothingToDo: the run went well and no pull request was opened or
	// updated (exit 0).
	NothingToDo Outcome = "nothing-to-do"
	// ChangesProposed: the run went well and opened or updated a pull
	// request (exit 0, or 4 with --detailed-exit-code).
	ChangesProposed Outcome = "changes-proposed"
	// Problems: the run finished but refused some input (exit 3).
	Problems Outcome = "problems"
	// Failed: the run stopped on an error (exit 1).
	Failed Outcome = "failed"
)

// Outcomes are every outcome, in the order metrics and docs list them.
func Outcomes() []Outcome { return []Outcome{NothingToDo, ChangesProposed, Problems, Failed} }

// Succeeded reports whether the run finished its work: everything but a
// failure. A run with problems did all it could with the rest of its
// input; its problems are counted, and alerted on, by cause.
func (o Outcome) Succeeded() bool { return o != Failed }

// Summary is one run, as far as it got. Its JSON field names are a
// contract (docs/observe.md).
type Summary struct {
	Outcome Outcome `json:"outcome"`
	// Error is why a failed run stopped.
	Error  string `json:"error,omitempty"`
	DryRun bool   `json:"dryRun"`
	// StartedAt is when the run began; At, the plan's evaluation time,
	// once a plan was made.
	StartedAt       time.Time `json:"startedAt"`
	DurationSeconds float64   `json:"durationSeconds"`
	At              string    `json:"at,omitempty"`
	// Decisions counts the plan's decisions by action, every action
	// named.
	Decisions map[engine.Action]int `json:"decisions"`
	GPUs      GPUs                  `json:"gpus"`
	// PullRequests are the change sets' pull requests, with their counts
	// by outcome, every outcome named.
	PullRequests PullRequests `json:"pullRequests"`
	Problems     ProblemList  `json:"problems"`
	// Live is the live stage's work; nil when live mode is off.
	Live *Live `json:"live,omitempty"`
}

// GPUs is the GPU share of the workloads the plan decided on, in GPUs:
// what they request now, and what they would with every recommended
// change merged (a workload that does not change counts as it is).
// gpu-memory requests count when the strategy gives the GPU's memory.
type GPUs struct {
	Requested   float64 `json:"requested"`
	Recommended float64 `json:"recommended"`
}

// PullRequests is what publishing did.
type PullRequests struct {
	Counts map[publish.Outcome]int `json:"counts"`
	Items  []PullRequest           `json:"items"`
}

// PullRequest is one change set's pull request.
type PullRequest struct {
	ChangeSet string          `json:"changeSet"`
	Branch    string          `json:"branch"`
	Outcome   publish.Outcome `json:"outcome"`
	Number    int             `json:"number,omitempty"`
	URL       string          `json:"url,omitempty"`
	Detail    string          `json:"detail,omitempty"`
}

// ProblemList is the refused input, with its counts by cause.
type ProblemList struct {
	Counts map[engine.Cause]int `json:"counts"`
	Items  []plan.Problem       `json:"items"`
}

// Live is what the live stage did.
type Live struct {
	Counts map[live.Outcome]int `json:"counts"`
	Items  []LiveChange         `json:"items"`
}

// LiveChange is one live change, or one marker reconciled.
type LiveChange struct {
	// Cluster is the cluster the change went to, when the repository
	// maps its clusters.
	Cluster   string       `json:"cluster,omitempty"`
	Namespace string       `json:"namespace"`
	Name      string       `json:"name"`
	Outcome   live.Outcome `json:"outcome"`
	Fields    []string     `json:"fields,omitempty"`
	Detail    string       `json:"detail,omitempty"`
	Warnings  []string     `json:"warnings,omitempty"`
}

// Run is what a run hands over when it ends; the parts it did not reach
// are nil.
type Run struct {
	Outcome  Outcome
	Err      error
	DryRun   bool
	Started  time.Time
	Duration time.Duration
	Plan     *plan.Plan
	Report   *publish.Report
	// LiveOn says live mode was on; Live are its results.
	LiveOn bool
	Live   []live.Result
	// LiveClusters holds the cluster of each of Live, "" where the
	// repository maps none; nil means none for all.
	LiveClusters []string
}

// New sums a run up.
func New(r Run) Summary {
	s := Summary{
		Outcome: r.Outcome, DryRun: r.DryRun, StartedAt: r.Started.UTC(), DurationSeconds: r.Duration.Seconds(),
		Decisions:    map[engine.Action]int{engine.Upsize: 0, engine.ScaleBack: 0, engine.NoChange: 0, engine.Skipped: 0},
		PullRequests: PullRequests{Counts: map[publish.Outcome]int{}, Items: []PullRequest{}},
		Problems:     ProblemList{Counts: map[engine.Cause]int{}, Items: []plan.Problem{}},
	}
	if r.Err != nil && r.Outcome == Failed {
		s.Error = r.Err.Error()
	}
	for _, o := range PullRequestOutcomes() {
		s.PullRequests.Counts[o] = 0
	}
	if p := r.Plan; p != nil {
		s.At = p.At.UTC().Format(time.RFC3339)
		for _, d := range p.Decisions {
			s.Decisions[d.Action]++
			s.GPUs.Requested += gpus(d.Current)
			if d.Action.Changes() {
				s.GPUs.Recommended += gpus(d.Recommended)
			} else {
				s.GPUs.Recommended += gpus(d.Current)
			}
		}
		for _, pr := range p.Problems {
			s.Problems.Counts[problemCause(pr)]++
			s.Problems.Items = append(s.Problems.Items, pr)
		}
	}
	// Sums of hundredths, rounded back to them.
	s.GPUs.Requested = math.Round(s.GPUs.Requested*100) / 100
	s.GPUs.Recommended = math.Round(s.GPUs.Recommended*100) / 100
	if rep := r.Report; rep != nil {
		for _, x := range rep.Results {
			s.PullRequests.Counts[x.Outcome]++
			s.PullRequests.Items = append(s.PullRequests.Items, PullRequest{ChangeSet: x.Key, Branch: x.Branch, Outcome: x.Outcome,
				Number: x.Number, URL: x.URL, Detail: x.Detail})
		}
	}
	if r.LiveOn {
		s.Live = &Live{Counts: map[live.Outcome]int{}, Items: []LiveChange{}}
		for i, x := range r.Live {
			s.Live.Counts[x.Outcome]++
			c := LiveChange{Namespace: x.Namespace, Name: x.Name, Outcome: x.Outcome,
				Fields: x.Fields, Detail: x.Detail, Warnings: x.Warnings}
			if i < len(r.LiveClusters) {
				c.Cluster = r.LiveClusters[i]
			}
			s.Live.Items = append(s.Live.Items, c)
		}
	}
	return s
}

// PullRequestOutcomes are every outcome of a pull request, in the order
// the table says them.
func PullRequestOutcomes() []publish.Outcome {
	return []publish.Outcome{publish.Opened, publish.Updated, publish.Unchanged, publish.Closed, publish.Declined,
		publish.Capped, publish.Kept, publish.Failed}
}

// Actions are every action of a decision, in the order the plan says
// them.
func Actions() []engine.Action {
	return []engine.Action{engine.Upsize, engine.ScaleBack, engine.NoChange, engine.Skipped}
}

// ProblemCauses are the causes of problems seen, sorted.
func (s Summary) ProblemCauses() []engine.Cause { return slices.Sorted(maps.Keys(s.Problems.Counts)) }

// Proposed counts the pull requests opened or updated.
func (s Summary) Proposed() int {
	return s.PullRequests.Counts[publish.Opened] + s.PullRequests.Counts[publish.Updated]
}

// unknownCause counts a problem whose kind the plan did not say.
const unknownCause engine.Cause = "unknown"

func problemCause(p plan.Problem) engine.Cause {
	if p.Cause == "" {
		return unknownCause
	}
	return p.Cause
}

// gpus is an allocation in GPUs; a gpu-memory request whose GPU's memory
// is unknown counts as none.
func gpus(a engine.Allocation) float64 {
	if a.Form == engine.NoGPU {
		return 0
	}
	return a.GPUs
}
