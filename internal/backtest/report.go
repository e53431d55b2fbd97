package backtest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
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

// WriteTable renders the results for people. It prints the rounded
// figures results.json holds, so that results.txt, results.json and the
// Markdown tables never disagree in the last digit.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	oracle, _ := slackOf(results, DailyOracle)
	fmt.Fprintln(tw, "strategy\trelative slack\tslack ÷ "+DailyOracle+"\tmemory breach min\tOOM kills\tevictions\tovershoot mean/max\tcompute breach min\tworkloads w/ memory breach\tchanges/workload/day\tPRs opened+updated/workload/day\t")
	for _, r := range results {
		t := toJSON(r.Total)
		fmt.Fprintf(tw, "%s\t%.1f%%\t%s\t%.0f\t%d\t%d\t%.0f%%/%.0f%%\t%.0f\t%d/%d (%.1f%%)\t%.2f\t%.2f+%.2f\t\n", r.Strategy, 100*t.RelativeSlack, ratio(r.Total, oracle),
			t.MemoryBreachMinutes, t.OOMKills, t.Evictions, t.MeanMemoryOvershoot, t.MaxMemoryOvershoot, t.ComputeBreachMinutes,
			t.WorkloadsWithMemoryBreach, t.Workloads, 100*float64(t.WorkloadsWithMemoryBreach)/float64(max(1, t.Workloads)),
			t.ChangesPerWorkloadDay, t.PullRequestsOpenedPerDay, t.PullRequestsUpdatedPerDay)
	}
	return tw.Flush()
}

// slackOf finds a strategy's slack in GPU-hours.
func slackOf(results []Result, name string) (float64, bool) {
	for _, r := range results {
		if r.Strategy == name {
			return r.Total.SlackGPUHours, true
		}
	}
	return 0, false
}

// ratio is a score's slack over the daily oracle's: how far from the
// least slack a pull-request recommender can reach. The ratio takes
// absolute slack, so it is on the same demand whatever each allocated.
func ratio(s Score, oracle float64) string {
	if oracle <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", round(s.SlackGPUHours/oracle, 3))
}

// Zero figures are left out: most workloads have no breach and no kill,
// and results.json holds every workload of every strategy twice.
type jsonScore struct {
	RelativeSlack             float64 `json:"relativeSlack"`
	AllocatedGPUHours         float64 `json:"allocatedGPUHours,omitempty"`
	SlackGPUHours             float64 `json:"slackGPUHours,omitempty"`
	MemoryBreachMinutes       float64 `json:"memoryBreachMinutes,omitempty"`
	ComputeBreachMinutes      float64 `json:"computeBreachMinutes,omitempty"`
	OOMKills                  int     `json:"oomKills,omitempty"`
	Evictions                 int     `json:"evictions,omitempty"`
	MeanMemoryOvershoot       float64 `json:"meanMemoryOvershootPercent,omitempty"`
	MaxMemoryOvershoot        float64 `json:"maxMemoryOvershootPercent,omitempty"`
	Workloads                 int     `json:"workloads"`
	WorkloadsWithMemoryBreach int     `json:"workloadsWithMemoryBreach,omitempty"`
	Changes                   int     `json:"changes,omitempty"`
	ChangesPerWorkloadDay     float64 `json:"changesPerWorkloadDay,omitempty"`
	PullRequestsOpened        int     `json:"pullRequestsOpened,omitempty"`
	PullRequestsUpdated       int     `json:"pullRequestsUpdated,omitempty"`
	PullRequestsOpenedPerDay  float64 `json:"pullRequestsOpenedPerWorkloadDay,omitempty"`
	PullRequestsUpdatedPerDay float64 `json:"pullRequestsUpdatedPerWorkloadDay,omitempty"`
}

func toJSON(s Score) jsonScore {
	opened, updated := s.PullRequestsPerWorkloadDay()
	return jsonScore{
		OOMKills: s.OOMKills, Evictions: s.Evictions, MeanMemoryOvershoot: round(s.MeanMemoryOvershootPercent(), 1), MaxMemoryOvershoot: round(s.MaxMemoryOvershootPercent, 1),
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
	Name string `json:"name"`
	// Frontier marks a setting of the frontier's knob (Options.Frontier).
	Frontier bool      `json:"frontier,omitempty"`
	Total    jsonScore `json:"total"`
	// SlackRatio is the total slack over the daily oracle's.
	SlackRatio float64        `json:"slackRatioToDailyOracle,omitempty"`
	Workloads  []jsonWorkload `json:"workloads"`
}

type jsonWorkload struct {
	Name    string `json:"name"`
	Cluster string `json:"cluster,omitempty"`
	jsonScore
}

type jsonDelivery struct {
	Name       string         `json:"name"`
	Live       bool           `json:"live"`
	Strategies []jsonStrategy `json:"strategies"`
}

// WriteJSON renders the results for machines, with every workload's score
// and, when the run followed one, the protocol that froze its policies.
func WriteJSON(w io.Writer, inputs []string, config any, protocol *ProtocolRecord, frontier []string, deliveries []Delivery) error {
	doc := struct {
		Inputs     []string        `json:"inputs"`
		Config     any             `json:"config"`
		Protocol   *ProtocolRecord `json:"protocol,omitempty"`
		Deliveries []jsonDelivery  `json:"deliveries"`
	}{Inputs: inputs, Config: config, Protocol: protocol}
	for _, d := range deliveries {
		jd := jsonDelivery{Name: d.Name, Live: d.Live}
		oracle, _ := slackOf(d.Results, DailyOracle)
		for _, r := range d.Results {
			js := jsonStrategy{Name: r.Strategy, Frontier: slices.Contains(frontier, r.Strategy), Total: toJSON(r.Total)}
			if oracle > 0 {
				js.SlackRatio = round(r.Total.SlackGPUHours/oracle, 3)
			}
			for _, ws := range r.Workloads {
				js.Workloads = append(js.Workloads, jsonWorkload{Name: ws.Name, Cluster: ws.Cluster, jsonScore: toJSON(ws.Score)})
			}
			jd.Strategies = append(jd.Strategies, js)
		}
		doc.Deliveries = append(doc.Deliveries, jd)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// Results is results.json read back: what docs/benchmarks/quality.md's tables are
// rendered from, so that they cannot drift from the run.
type Results struct {
	Inputs     []string        `json:"inputs"`
	Protocol   *ProtocolRecord `json:"protocol"`
	Deliveries []struct {
		Name       string `json:"name"`
		Strategies []struct {
			Name       string    `json:"name"`
			Frontier   bool      `json:"frontier"`
			Total      jsonScore `json:"total"`
			SlackRatio float64   `json:"slackRatioToDailyOracle"`
		} `json:"strategies"`
	} `json:"deliveries"`
}

// ReadResults reads a results.json.
func ReadResults(r io.Reader) (*Results, error) {
	var doc Results
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return nil, err
	}
	return &doc, nil
}

// WriteMarkdown renders one table per delivery, as docs/benchmarks/quality.md shows
// them.
func (doc *Results) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	for i, d := range doc.Deliveries {
		if d.Name == "" {
			return fmt.Errorf("delivery %d has no name", i)
		}
		if i > 0 {
			fmt.Fprintln(&b)
		}
		fmt.Fprintf(&b, "*%s*\n\n", strings.ToUpper(d.Name[:1])+d.Name[1:])
		fmt.Fprintln(&b, "| strategy | relative slack | slack ÷ "+DailyOracle+" | memory breach min | OOM kills | evictions | overshoot mean / max | compute breach min | workloads w/ memory breach | changes /workload/day | PRs opened + updated /workload/day |")
		fmt.Fprintln(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, s := range d.Strategies {
			if s.Frontier {
				// The frontier's settings are in frontier.md.
				continue
			}
			t := s.Total
			fmt.Fprintf(&b, "| %s | %.1f %% | %.2f | %.0f | %d | %d | %.0f %% / %.0f %% | %.0f | %d/%d | %.2f | %.2f + %.2f |\n",
				s.Name, 100*t.RelativeSlack, s.SlackRatio, t.MemoryBreachMinutes, t.OOMKills, t.Evictions, t.MeanMemoryOvershoot, t.MaxMemoryOvershoot,
				t.ComputeBreachMinutes, t.WorkloadsWithMemoryBreach, t.Workloads, t.ChangesPerWorkloadDay,
				t.PullRequestsOpenedPerDay, t.PullRequestsUpdatedPerDay)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
