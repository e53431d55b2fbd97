package consolidate

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
)

// WriteText prints the report as a short table, one row per candidate,
// under two lines of counts; then the resizes that move pods, the notes,
// and what the report does not model. Names come from the cluster, so a
// name a terminal would act on is quoted.
func (r Report) WriteText(w io.Writer) error {
	in := ""
	if r.Cluster != "" {
		in = " in cluster " + printable(r.Cluster)
	}
	fmt.Fprintf(w, "GpuConsolidationPolicy %s%s: %d nodes, %d GPUs, candidates used below %d%%\n",
		printable(r.Policy), in, r.Nodes, r.GPUs, r.ThresholdPercent)
	fmt.Fprintf(w, "GPUs in use now %d; needed now %d, after the open pull requests %d; in use after the drains %d\n",
		r.InUse, r.NeededNow, r.NeededAfter, r.InUseAfter)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tGPUS\tUSED\tDRAIN\tMOVES OR WHY NOT")
	for _, c := range r.Candidates {
		drain, detail := "no", printable(c.Why)
		if c.Drainable {
			drain, detail = "yes", moves(c.Moves)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%s\t%s\n", printable(c.Node), c.GPUs, c.Used, drain, detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var resized []Move
	for _, m := range r.Moves {
		if m.Reason == "resized" {
			resized = append(resized, m)
		}
	}
	if len(resized) > 0 {
		fmt.Fprintf(w, "moved by their resize: %s\n", moves(resized))
	}
	for _, room := range r.Rollouts {
		fmt.Fprintf(w, "rollout room: %s\n", printable(room.Sentence()))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", printable(n))
	}
	names := make([]string, len(r.Unmodelled))
	for i, c := range r.Unmodelled {
		names[i] = string(c)
	}
	_, err := fmt.Fprintf(w, "not modelled: %s\n", strings.Join(names, "; "))
	return err
}

func moves(ms []Move) string {
	if len(ms) == 0 {
		return "idle: nothing to move"
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = printable(m.Pod) + " (" + m.Share.String() + ") → " + printable(m.To.String())
	}
	return strings.Join(out, ", ")
}

// printable quotes a string holding anything but printable characters,
// so that a hostile name cannot move the cursor or break the table.
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) || r == '\t' {
			return strconv.Quote(s)
		}
	}
	return s
}
