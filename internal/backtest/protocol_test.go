package backtest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// gitRepo is a work tree with a git history, for the protocol's checks.
type gitRepo struct {
	t   *testing.T
	dir string
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	testenv.LookPath(t, "git")
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

func (r *gitRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(r.t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func (r *gitRepo) write(name, text string) string {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	require.NoError(r.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(r.t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

// commit commits every change and returns the commit.
func (r *gitRepo) commit(msg string) string {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

func sum(text string) string {
	s := sha256.Sum256([]byte(text))
	return hex.EncodeToString(s[:])
}

// protocolText freezes the given files, as sha256sum prints them.
func protocolText(files map[string]string) string {
	var b strings.Builder
	b.WriteString("# protocol\n\n```sha256\n")
	for name, text := range files {
		b.WriteString(sum(text) + "  " + name + "\n")
	}
	b.WriteString("```\n")
	return b.String()
}

const policyA, policyB = "kind: A\n", "kind: B\n"

// TestCheckFrozen: scoring refuses what the committed protocol does not
// freeze, and a protocol that is not committed as it is.
func TestCheckFrozen(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// set up writes the repository and returns the policy files to
		// score and the commit that should have frozen them.
		setUp func(r *gitRepo) (files []string, frozenBy string)
		err   string
	}{
		{name: "frozen, committed", setUp: func(r *gitRepo) ([]string, string) {
			a := r.write("a.yaml", policyA)
			r.write("protocol.md", protocolText(map[string]string{"a.yaml": policyA}))
			c := r.commit("protocol")
			r.write("results.txt", "later")
			r.commit("results")
			return []string{a}, c
		}},
		{name: "frozen by an amendment", setUp: func(r *gitRepo) ([]string, string) {
			a := r.write("a.yaml", policyA)
			r.write("protocol.md", protocolText(map[string]string{"a.yaml": policyA}))
			r.commit("protocol")
			b := r.write("b.yaml", policyB)
			r.write("protocol.md", protocolText(map[string]string{"a.yaml": policyA})+"\n## Amendment\n\n```sha256\n"+sum(policyB)+"  b.yaml\n```\n")
			return []string{a, b}, r.commit("amendment")
		}},
		{name: "a policy the protocol does not freeze", setUp: func(r *gitRepo) ([]string, string) {
			r.write("a.yaml", policyA)
			r.write("protocol.md", protocolText(map[string]string{"a.yaml": policyA}))
			r.commit("protocol")
			return []string{r.write("b.yaml", policyB)}, ""
		}, err: "policy file %s/b.yaml (sha256 " + sum(policyB) + "): not frozen by the protocol in %s/protocol.md"},
		{name: "a frozen policy edited since", setUp: func(r *gitRepo) ([]string, string) {
			r.write("a.yaml", policyA)
			r.write("protocol.md", protocolText(map[string]string{"a.yaml": policyA}))
			r.commit("protocol")
			return []string{r.write("a.yaml", policyA+"# tuned\n")}, ""
		}, err: "policy file %s/a.yaml (sha256 " + sum(policyA+"# tuned\n") + "): not frozen by the protocol"},
		{name: "an amendment not committed", setUp: func(r *gitRepo) ([]string, string) {
			a := r.write("a.yaml", policyA)
			r.write("protocol.md", protocolText(map[string]string{"a.yaml": policyA}))
			r.commit("protocol")
			r.write("protocol.md", protocolText(map[string]string{"a.yaml": policyA, "b.yaml": policyB}))
			return []string{a, r.write("b.yaml", policyB)}, ""
		}, err: "protocol %s/protocol.md is not committed as it is: commit it before scoring what it governs"},
		{name: "a protocol never committed", setUp: func(r *gitRepo) ([]string, string) {
			r.write("README", "x")
			r.commit("init")
			a := r.write("a.yaml", policyA)
			r.write("protocol.md", protocolText(map[string]string{"a.yaml": policyA}))
			return []string{a}, ""
		}, err: "protocol %s/protocol.md is not committed as it is"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newGitRepo(t)
			files, want := tt.setUp(r)
			proto := filepath.Join(r.dir, "protocol.md")
			rec, err := backtest.CheckFrozen(ctx, backtest.Git{Dir: r.dir}, proto, files)
			if tt.err != "" {
				require.ErrorContains(t, err, strings.ReplaceAll(tt.err, "%s", r.dir))
				return
			}
			require.NoError(t, err)
			require.Len(t, rec.Policies, len(files))
			// Each file is frozen by the commit that first held its hash.
			last := rec.Policies[len(rec.Policies)-1]
			require.Equal(t, want, last.Commit)
			require.Equal(t, sum(policyA), rec.Policies[0].SHA256)
		})
	}
}

// TestCheckResultsFollow: results committed before the commit that froze
// their policy, or naming no protocol, are refused; results committed after
// it pass.
func TestCheckResultsFollow(t *testing.T) {
	ctx := context.Background()
	r := newGitRepo(t)
	a := r.write("a.yaml", policyA)
	// Results scored, and committed, before the protocol froze a.yaml.
	early := r.write("early/results.json", "{}")
	r.commit("results before the protocol")
	proto := r.write("protocol.md", protocolText(map[string]string{"a.yaml": policyA}))
	frozenBy := r.commit("protocol")
	late := r.write("late/results.json", "{}")
	r.commit("results after the protocol")
	h := backtest.Git{Dir: r.dir}
	rel, err := filepath.Rel(r.dir, proto)
	require.NoError(t, err)
	rec := &backtest.ProtocolRecord{File: rel, Policies: []backtest.Frozen{{Path: a, SHA256: sum(policyA), Commit: frozenBy}}}

	require.NoError(t, backtest.CheckResultsFollow(ctx, h, r.dir, late, rec))
	err = backtest.CheckResultsFollow(ctx, h, r.dir, early, rec)
	require.ErrorIs(t, err, backtest.ErrNotFrozen)
	require.ErrorContains(t, err, "which is not an ancestor of the results")
	require.ErrorContains(t, backtest.CheckResultsFollow(ctx, h, r.dir, late, nil), "names no protocol: run the backtest with --protocol")
	// A record that names a commit other than the one that froze the hash.
	forged := *rec
	forged.Policies = []backtest.Frozen{{Path: a, SHA256: sum(policyA), Commit: r.git("rev-parse", "HEAD~2")}}
	require.ErrorContains(t, backtest.CheckResultsFollow(ctx, h, r.dir, late, &forged), "the protocol froze sha256")
}

// TestReplayRefusesUnfrozen: with --protocol, a run that would score a
// policy file the protocol does not freeze replays nothing and writes
// nothing; a frozen one is scored and results.json names the commit.
func TestReplayRefusesUnfrozen(t *testing.T) {
	ctx := context.Background()
	r := newGitRepo(t)
	policy, err := os.ReadFile(filepath.Join("..", "..", "examples", "policies", "recommended.yaml"))
	require.NoError(t, err)
	rec := r.write("recommended.yaml", string(policy))
	r.write("protocol.md", protocolText(map[string]string{"recommended.yaml": string(policy)}))
	frozenBy := r.commit("protocol")
	var csv bytes.Buffer
	require.NoError(t, backtest.WriteCSV(&csv, []*backtest.Trace{trace("w", 180, constant(10), constant(20))}))
	traces := r.write("t.csv", csv.String())
	tuned := r.write("tuned.yaml", string(policy)+"# tuned\n")

	run := func(out string, policies ...string) error {
		return backtest.Replay(ctx, backtest.Options{Traces: []string{traces}, Policies: policies, Start: 1, Cadence: time.Hour,
			MergeDelay: 2 * time.Hour, OutDir: out, Protocol: filepath.Join(r.dir, "protocol.md"), Out: io.Discard,
			Logger: slog.New(slog.DiscardHandler)})
	}
	out := filepath.Join(t.TempDir(), "refused")
	err = run(out, "recommended="+rec, "tuned="+tuned)
	require.ErrorIs(t, err, backtest.ErrNotFrozen)
	require.NoDirExists(t, out)

	out = filepath.Join(t.TempDir(), "scored")
	require.NoError(t, run(out, "recommended="+rec))
	f, err := os.Open(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	defer f.Close()
	var doc struct {
		Protocol backtest.ProtocolRecord `json:"protocol"`
	}
	require.NoError(t, json.NewDecoder(f).Decode(&doc))
	require.Equal(t, []backtest.Frozen{{Path: filepath.ToSlash(rec), SHA256: sum(string(policy)), Commit: frozenBy}}, doc.Protocol.Policies)
}

func TestParseFrozen(t *testing.T) {
	tests := []struct {
		name, text string
		want       map[string]string
		err        string
	}{
		{name: "blocks of sha256 only", text: "```sha256\n" + sum("a") + "  a.yaml\n```\n```\n" + sum("b") + "  b.yaml\n```\n",
			want: map[string]string{sum("a"): "a.yaml"}},
		{name: "sha256sum's binary mark", text: "```sha256\n" + sum("a") + " *a.yaml\n```\n", want: map[string]string{sum("a"): "a.yaml"}},
		{name: "a line not in sha256sum's format", text: "text\n```sha256\nnot a hash\n```\n", err: "p.md:3: \"not a hash\" is not \"<sha256>  <path>\""},
		{name: "a block not closed", text: "```sha256\n", err: "p.md: a sha256 block is not closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := backtest.ParseFrozen("p.md", []byte(tt.text))
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
