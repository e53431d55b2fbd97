package patcher_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
)

// manifestGen writes a Deployment in a random combination of the styles
// real repositories use. Every combination is valid and editable, so the
// property is strong: no refusal, values land, only intended lines change.
type manifestGen struct {
	t      *rapid.T
	unit   int  // mapping indentation step
	wide   bool // sequences indented under their key
	lines  []string
	hasVLM bool // a vLLM container that must carry the flag afterwards
	// migrate: the pod moves from whole GPUs to a fraction, so it may
	// request nvidia.com/gpu (else the fraction could not be set).
	migrate bool
	gpu     bool // the vLLM container requests nvidia.com/gpu
	initGPU bool // the init container does
}

func (g *manifestGen) ind(level int) string { return strings.Repeat(" ", level*g.unit) }

// line adds a line, sometimes with a comment above it, a comment after it
// or trailing blanks.
func (g *manifestGen) line(level int, text string, plainEnd bool) {
	if rapid.IntRange(0, 9).Draw(g.t, "head comment") == 0 {
		g.lines = append(g.lines, g.ind(level)+"# about "+strings.SplitN(strings.TrimLeft(text, "- "), ":", 2)[0])
	}
	if plainEnd {
		switch rapid.IntRange(0, 9).Draw(g.t, "line end") {
		case 0:
			text += "   # note"
		case 1:
			text += "  "
		}
	}
	g.lines = append(g.lines, g.ind(level)+text)
}

// seqItem returns the indentation level and prefix of items of a
// sequence under a key at level.
func (g *manifestGen) seq(level int) (string, int) {
	if g.wide {
		return g.ind(level+1) + "- ", level + 1
	}
	return g.ind(level) + "- ", level
}

func quote(t *rapid.T, s, label string) string {
	switch rapid.IntRange(0, 2).Draw(t, label) {
	case 1:
		return `"` + s + `"`
	case 2:
		return "'" + s + "'"
	}
	return s
}

func (g *manifestGen) vllmContainer(level int, util string) {
	t := g.t
	present := rapid.Bool().Draw(t, "flag present")
	flag := rapid.SampledFrom([]string{"--gpu-memory-utilization", "--gpu_memory_utilization"}).Draw(t, "spelling")
	dash, _ := g.seq(level)
	g.lines = append(g.lines, dash+"name: vllm")
	item := strings.Repeat(" ", len(dash))
	form := rapid.IntRange(0, 9).Draw(t, "vllm form")
	image := rapid.SampledFrom([]string{"vllm/vllm-openai:v0.8.5", "registry.example.com/llm:1"}).Draw(t, "image")
	if form == 2 || form == 7 { // the image's entrypoint runs vllm: only the image says so
		image = "vllm/vllm-openai:v0.8.5"
	}
	g.lines = append(g.lines, item+"image: "+image)
	g.hasVLM = true
	listItems := func(key string, items []string) {
		g.lines = append(g.lines, item+key+":")
		// Items sit under the container's keys, one indentation unit in
		// when sequences are wide.
		d := strings.Repeat(" ", len(item)) + "- "
		if g.wide {
			d = strings.Repeat(" ", len(item)+g.unit) + "- "
		}
		for _, it := range items {
			g.lines = append(g.lines, d+it)
		}
	}
	switch form {
	case 0: // separate items
		items := []string{"--model", quote(t, "m/x", "q model")}
		if present {
			items = append(items, quote(t, flag, "q flag"), quote(t, util, "q util"))
		}
		items = append(items, "--port", `"8000"`)
		g.lines = append(g.lines, item+`command: ["python3", "-m", "vllm.entrypoints.openai.api_server"]`)
		listItems("args", items)
	case 1: // --flag=value items, vllm serve as arguments
		items := []string{"serve", "m/x"}
		if present {
			items = append(items, quote(t, flag+"="+util, "q eq"))
		}
		if rapid.Bool().Draw(t, "more") {
			items = append(items, "--max-num-seqs", `"64"`)
		}
		g.lines = append(g.lines, item+"command: [vllm]")
		listItems("args", items)
	case 2: // flow sequence
		items := []string{`"--model"`, `"m/x"`}
		if present {
			items = append(items, `"`+flag+`"`, `"`+util+`"`)
		}
		g.lines = append(g.lines, item+"args: ["+strings.Join(items, ", ")+"]")
	case 3: // plain sh -c string
		s := "vllm serve m/x --port 8000"
		if present {
			s += " " + flag + " " + util
		}
		g.lines = append(g.lines, item+"command: [/bin/sh, -c]")
		listItems("args", []string{s})
	case 4: // multi-line double-quoted sh -c string
		g.lines = append(g.lines, item+"command:")
		d := strings.Repeat(" ", len(item)) + "- "
		cont := strings.Repeat(" ", len(item)+3)
		g.lines = append(g.lines, d+"sh", d+"-c")
		second := "python3 -m vllm.entrypoints.openai.api_server --port 8080"
		switch {
		case present && rapid.Bool().Draw(t, "split flag"):
			g.lines = append(g.lines, d+`"echo start;`, cont+second+" "+flag, cont+util+`"`)
		case present:
			g.lines = append(g.lines, d+`"echo start;`, cont+second+" "+flag+"="+util+`"`)
		default:
			g.lines = append(g.lines, d+`"echo start;`, cont+second+`"`)
		}
	case 5, 6: // literal or folded block
		ind := "|"
		if form == 6 {
			ind = ">"
		}
		ind += rapid.SampledFrom([]string{"", "-"}).Draw(t, "chomp")
		g.lines = append(g.lines, item+"command: [bash, -c]")
		g.lines = append(g.lines, item+"args:")
		d := strings.Repeat(" ", len(item)) + "- "
		body := strings.Repeat(" ", len(item)+2)
		g.lines = append(g.lines, d+ind)
		if form == 5 {
			g.lines = append(g.lines, body+"set -e", body+"exec vllm serve m/x \\", body+"  --port 8000")
			if present {
				g.lines[len(g.lines)-1] += " \\"
				g.lines = append(g.lines, body+"  "+flag+" "+util)
			}
		} else {
			g.lines = append(g.lines, body+"vllm serve m/x", body+"--port 8000")
			if present {
				g.lines = append(g.lines, body+flag+"="+util)
			}
		}
	case 7: // image entrypoint, args only
		items := []string{"--model", "m/x"}
		if present {
			items = append(items, flag+"="+util)
		}
		listItems("args", items)
	case 9: // quoted script in a flow sequence
		s := "vllm serve m/x"
		if present {
			s += " " + flag + "=" + util
		}
		if rapid.Bool().Draw(t, "port") {
			s += " --port 8000"
		}
		q := rapid.SampledFrom([]string{`"`, "'"}).Draw(t, "script quote")
		g.lines = append(g.lines, item+"command: ["+q+"sh"+q+", "+q+"-c"+q+", "+q+s+q+"]")
	case 8: // everything in command
		items := []string{"vllm", "serve", "m/x"}
		if present {
			items = append(items, flag, quote(t, util, "q util"))
		}
		listItems("command", items)
	}
	// Whole GPUs only when the ops remove them: KAI refuses them next to a
	// fraction.
	gpu := func(whole, other string) string {
		if g.migrate {
			return whole
		}
		return other
	}
	r := rapid.IntRange(0, 4).Draw(t, "resources")
	g.gpu = g.migrate && r != 0
	switch r {
	case 1:
		g.lines = append(g.lines, item+"resources:", item+g.ind(1)+"limits:", item+g.ind(2)+gpu(`nvidia.com/gpu: "1"`, `cpu: "1"`))
	case 4:
		g.lines = append(g.lines, item+"resources:", item+g.ind(1)+"requests:", item+g.ind(2)+"memory: 1Gi", item+g.ind(2)+gpu("nvidia.com/gpu: 1", "cpu: 1"),
			item+g.ind(1)+"limits:", item+g.ind(2)+gpu("nvidia.com/gpu: 1", "memory: 1Gi"))
	case 2:
		g.lines = append(g.lines, item+"resources:", item+g.ind(1)+"limits:", item+g.ind(2)+"cpu: 2", item+g.ind(2)+gpu("nvidia.com/gpu : 1 # whole", "memory : 1Gi # all"))
	case 3:
		g.lines = append(g.lines, item+"resources: {limits: {"+gpu("nvidia.com/gpu: 1", "cpu: 1")+"}}")
	}
}

func (g *manifestGen) deployment(util string) {
	t := g.t
	g.line(0, "apiVersion: apps/v1", true)
	g.line(0, "kind: Deployment", true)
	g.line(0, "metadata:", false)
	g.line(1, "name: app", true)
	g.line(0, "spec:", false)
	g.line(1, "selector:", false)
	g.line(2, "matchLabels:", false)
	g.line(3, "app: app", true)
	g.line(1, "template:", false)
	meta := func() {
		switch rapid.IntRange(0, 7).Draw(t, "metadata") {
		case 6:
			g.line(2, "metadata:", false)
			g.line(3, "annotations:", false)
			g.line(3, "labels: {app: app}", true)
		case 7:
			g.line(2, "metadata:", false)
			g.line(3, "annotations: ~", true)
		case 0:
			return // no metadata
		case 1:
			g.line(2, "metadata:", false)
			g.line(3, "labels:", false)
			g.line(4, "app: app", true)
		case 2:
			g.line(2, "metadata:", false)
			g.line(3, "annotations:", false)
			g.line(4, "gpu-fraction: "+quote(t, "0.5", "q fraction"), true)
		case 3:
			g.line(2, "metadata:", false)
			g.line(3, "annotations: {team: ml}", true)
		case 4:
			g.line(2, "metadata:", false)
			g.line(3, "annotations: {}", true)
		case 5:
			g.line(2, "metadata: {labels: {app: app}}", true)
		}
	}
	metaFirst := rapid.IntRange(0, 4).Draw(t, "metadata after spec") != 0
	if metaFirst {
		meta()
	}
	g.line(2, "spec:", false)
	g.line(3, "containers:", false)
	var vllm []string
	if rapid.Bool().Draw(t, "vllm") {
		before := g.lines
		g.lines = nil
		g.vllmContainer(3, rapid.SampledFrom([]string{"0.9", "0.95", ".8"}).Draw(t, "old util"))
		vllm, g.lines = g.lines, before
	}
	if !g.hasVLM || rapid.Bool().Draw(t, "sidecar") {
		dash, _ := g.seq(3)
		sidecar := []string{dash + "name: sidecar", strings.Repeat(" ", len(dash)) + "image: envoyproxy/envoy:v1.31"}
		// A GPU container after another one gets the fraction by name.
		if g.gpu && rapid.Bool().Draw(t, "sidecar first") {
			vllm = append(sidecar, vllm...)
		} else {
			vllm = append(vllm, sidecar...)
		}
	}
	g.lines = append(g.lines, vllm...)
	if rapid.Bool().Draw(t, "init container") {
		g.line(3, "initContainers:", false)
		dash, _ := g.seq(3)
		// The init container may hold the GPU when no vLLM container
		// needs it: the fraction then goes to it by name.
		res := "resources: {limits: {memory: 1Gi}}"
		if g.migrate && !g.hasVLM {
			res, g.initGPU = "resources: {limits: {nvidia.com/gpu: 1, memory: 1Gi}}", true
		}
		g.lines = append(g.lines, dash+"name: fetch", strings.Repeat(" ", len(dash))+"image: busybox",
			strings.Repeat(" ", len(dash))+res)
	}
	if !metaFirst {
		meta()
	}
}

func TestApplyProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := &manifestGen{t: rt, unit: rapid.SampledFrom([]int{2, 4}).Draw(rt, "unit"), wide: rapid.Bool().Draw(rt, "wide")}
		extra := rapid.Bool().Draw(rt, "kai migration")
		g.migrate = extra
		if rapid.Bool().Draw(rt, "header") {
			g.lines = append(g.lines, "# Copyright header", "", "---")
		}
		if rapid.Bool().Draw(rt, "service before") {
			g.lines = append(g.lines, "apiVersion: v1", "kind: Service", "metadata:", "  name: app", "---")
		}
		g.deployment("")
		if rapid.Bool().Draw(rt, "configmap after") {
			g.lines = append(g.lines, "---", "apiVersion: v1", "kind: ConfigMap", "metadata:", "  name: cfg")
		}
		eol := rapid.SampledFrom([]string{"\n", "\r\n"}).Draw(rt, "eol")
		src := strings.Join(g.lines, eol)
		if rapid.Bool().Draw(rt, "final newline") {
			src += eol
		}
		if rapid.IntRange(0, 4).Draw(rt, "bom") == 0 {
			src = "\ufeff" + src
		}

		frac := fmt.Sprintf("0.%02d", rapid.IntRange(1, 99).Draw(rt, "fraction"))
		util := fmt.Sprintf("0.%02d", rapid.IntRange(1, 99).Draw(rt, "util"))
		ops := []workload.Op{patcher.SetGPUFraction(frac), patcher.SetVLLMMemoryUtilization(util)}
		if extra {
			ops = append(ops, patcher.RemoveWholeGPUs(), patcher.SetSchedulerName("kai-scheduler"), patcher.SetPodLabel("kai.scheduler/queue", "default-queue"))
		}

		ctx := context.Background()
		root := t.TempDir()
		p := filepath.Join(root, "d.yaml")
		require.NoError(rt, os.WriteFile(p, []byte(src), 0o644))
		inv, err := patcher.Discover(ctx, root)
		require.NoError(rt, err)
		require.Empty(rt, inv.Problems, src)
		require.Len(rt, inv.Workloads, 1)
		edit := []patcher.Edit{{Workload: inv.Workloads[0].Ref, Ops: ops}}
		res, err := patcher.Apply(ctx, root, inv, edit)
		require.NoError(rt, err)
		require.Empty(rt, res.Refused, "source:\n%s", src)
		require.Empty(rt, res.Notes)
		require.Len(rt, res.Files, 1)
		f := res.Files[0]
		require.NoError(rt, splicesCoverDiff(f))
		if !extra {
			require.NoError(rt, onlyIntendedLines(f.Old, f.New, frac, util), "diff:\n%s", f.Diff())
		}
		require.Equal(rt, strings.HasPrefix(src, "\ufeff"), strings.HasPrefix(string(f.New), "\ufeff"))

		require.NoError(rt, writeResult(root, res))
		after, err := patcher.Discover(ctx, root)
		require.NoError(rt, err)
		require.Empty(rt, after.Problems)
		w := after.Workloads[0]
		require.Equal(rt, frac, w.GPU.FractionText, "diff:\n%s", f.Diff())
		for _, c := range w.Containers {
			if c.Name == "vllm" {
				require.Equal(rt, util, c.GPUMemoryUtilization, "diff:\n%s", f.Diff())
			}
		}
		switch {
		case g.gpu:
			require.Equal(rt, "vllm", w.GPU.Container, "diff:\n%s", f.Diff())
		case g.initGPU:
			require.Equal(rt, "fetch", w.GPU.Container, "diff:\n%s", f.Diff())
		}
		if extra {
			require.Zero(rt, w.GPU.Whole)
			require.Equal(rt, "kai-scheduler", w.SchedulerName)
			require.Equal(rt, "default-queue", w.Queue)
		}

		again, err := patcher.Apply(ctx, root, after, []patcher.Edit{{Workload: w.Ref, Ops: ops}})
		require.NoError(rt, err)
		require.Empty(rt, again.Refused)
		require.False(rt, again.Changed(), "not idempotent:\n%s", func() string {
			if len(again.Files) > 0 {
				return again.Files[0].Diff()
			}
			return ""
		}())
	})
}
