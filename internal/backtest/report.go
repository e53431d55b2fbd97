package backtest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// The two deliveries every strategy is replayed under.
const (
	PullRequests     = "pull requests"
	PullRequestsLive = "pull requests + live fast path"
)

// Delivery is one way changes reach the cluster, and every strategy's
// outcome under it.
type Delivery struct {
	Name    string
	Live    bool
	Results []Result
}

// WriteTables renders one table per delivery.
func WriteTables(w io.Writer, deliveries []Delivery) error {
	for _, d := range deliveries {
		fmt.Fprintf(w, "\n%s:\n\n", d.Name)
		if err := WriteTable(w, d.Results); err != nil {
			return err
		}
	}
	return nil
}

// WriteTable renders the results for people.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\trelative slack\tmemory breach min\tOOM kills\tovershoot mean/max\tcompute breach min\tworkloads w/ memory breach\tchanges/workload/day\tPRs opened+updated/workload/day\t")
	for _, r := range results {
		t := r.Total
		opened, updated := t.PullRequestsPerWorkloadDay()
		fmt.Fprintf(tw, "%s\t%.1f%%\t%.0f\t%d\t%.0f%%/%.0f%%\t%.0f\t%d/%d (%.1f%%)\t%.2f\t%.2f+%.2f\t\n", r.Strategy, 100*t.RelativeSlack(),
			t.MemoryBreachMinutes, t.OOMKills, t.MeanMemoryOvershootPercent(), t.MaxMemoryOvershootPercent, t.ComputeBreachMinutes,
			t.WorkloadsWithMemoryBreach, t.Workloads, 100*float64(t.WorkloadsWithMemoryBreach)/float64(max(1, t.Workloads)),
			t.ChangesPerWorkloadDay(), opened, updated)
	}
	return tw.Flush()
}

type jsonScore struct {
	RelativeSlack             float64 `json:"relativeSlack"`
	AllocatedGPUHours         float64 `json:"allocatedGPUHours"`
	SlackGPUHours             float64 `json:"slackGPUHours"`
	MemoryBreachMinutes       float64 `json:"memoryBreachMinutes"`
	ComputeBreachMinutes      float64 `json:"computeBreachMinutes"`
	OOMKills                  int     `json:"oomKills"`
	MeanMemoryOvershoot       float64 `json:"meanMemoryOvershootPercent"`
	MaxMemoryOvershoot        float64 `json:"maxMemoryOvershootPercent"`
	Workloads                 int     `json:"workloads"`
	WorkloadsWithMemoryBreach int     `json:"workloadsWithMemoryBreach"`
	Changes                   int     `json:"changes"`
	ChangesPerWorkloadDay     float64 `json:"changesPerWorkloadDay"`
	PullRequestsOpened        int     `json:"pullRequestsOpened"`
	PullRequestsUpdated       int     `json:"pullRequestsUpdated"`
	PullRequestsOpenedPerDay  float64 `json:"pullRequestsOpenedPerWorkloadDay"`
	PullRequestsUpdatedPerDay float64 `json:"pullRequestsUpdatedPerWorkloadDay"`
}

func toJSON(s Score) jsonScore {
	opened, updated := s.PullRequestsPerWorkloadDay()
	return jsonScore{
		OOMKills: s.OOMKills, MeanMemoryOvershoot: round(s.MeanMemoryOvershootPercent(), 1), MaxMemoryOvershoot: round(s.MaxMemoryOvershootPercent, 1),
		PullRequestsOpened: s.PullRequestsOpened, PullRequestsUpdated: s.PullRequestsUpdated,
		PullRequestsOpenedPerDay: round(opened, 3), PullRequestsUpdatedPerDay: round(updated, 3),
		RelativeSlack: round(s.RelativeSlack(), 4), AllocatedGPUHours: round(s.AllocatedGPUHours, 3),
		SlackGPUHours: round(s.SlackGPUHours, 3), MemoryBreachMinutes: round(s.MemoryBreachMinutes, 1),
		ComputeBreachMinutes: round(s.ComputeBreachMinutes, 1), Workloads: s.Workloads,
		WorkloadsWithMemoryBreach: s.WorkloadsWithMemoryBreach, Changes: s.Changes,
		ChangesPerWorkloadDay: round(s.ChangesPerWorkloadDay(), 3),
	}
}

func round(v float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(v*p) / p
}

type jsonStrategy struct {
	Name      string         `json:"name"`
	Total     jsonScore      `json:"total"`
	Workloads []jsonWorkload `json:"workloads"`
}

type jsonWorkload struct {
	Name string `json:"name"`
	jsonScore
}

type jsonDelivery struct {
	Name       string         `json:"name"`
	Live       bool           `json:"live"`
	Strategies []jsonStrategy `json:"strategies"`
}

// WriteJSON renders the results for machines, with every workload's score.
func WriteJSON(w io.Writer, inputs []string, config any, deliveries []Delivery) error {
	doc := struct {
		Inputs     []string       `json:"inputs"`
		Config     any            `json:"config"`
		Deliveries []jsonDelivery `json:"deliveries"`
	}{Inputs: inputs, Config: config}
	for _, d := range deliveries {
		jd := jsonDelivery{Name: d.Name, Live: d.Live}
		for _, r := range d.Results {
			js := jsonStrategy{Name: r.Strategy, Total: toJSON(r.Total)}
			for _, ws := range r.Workloads {
				js.Workloads = append(js.Workloads, jsonWorkload{Name: ws.Name, jsonScore: toJSON(ws.Score)})
			}
			jd.Strategies = append(jd.Strategies, js)
		}
		doc.Deliveries = append(doc.Deliveries, jd)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
