package publish_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// tick checks the box of a pull request's body that carries marker, as a
// person does on the forge's page.
func tick(t *testing.T, g *gitops, number int, marker string) {
	t.Helper()
	pr, err := g.forge.Get(number)
	require.NoError(t, err)
	body := strings.Replace(pr.Body, "- [ ] "+marker, "- [x] "+marker, 1)
	require.NotEqual(t, pr.Body, body, "the body has the box %s", marker)
	require.NoError(t, g.forge.Update(context.Background(), number, pr.Title, body))
}

// TestBoxesInThePullRequest: the boxes of a pull request's own body act
// at the next run, as the dashboard's do, and the body it writes then has
// them unticked: rebase makes the branch afresh on the base, over a
// person's commit; retry proposes a declined change again.
func TestBoxesInThePullRequest(t *testing.T) {
	g := newGitops(t)
	src := recorded(t)
	g.publish(src, at, publish.Options{})

	// A person's commit on chat's branch: kept, until they tick rebase.
	g.run("checkout", "-q", chatBr)
	require.NoError(t, os.WriteFile(filepath.Join(g.dir, "NOTES"), []byte("mine\n"), 0o644))
	g.run("add", "NOTES")
	g.run("commit", "-q", "-m", "a person's commit")
	g.run("checkout", "-q", "main")
	rep := g.publish(src, at, publish.Options{})
	require.Equal(t, publish.Kept, outcomes(rep)[chat])

	chatPR := prNumber(t, g, chatBr)
	tick(t, g, chatPR, "<!-- gpu-rightsizing:rebase -->")
	rep = g.publish(src, at, publish.Options{})
	require.Equal(t, publish.Updated, outcomes(rep)[chat], "%v", rep.Results)
	require.Equal(t, g.head("main"), g.head(chatBr+"^"), "the branch is one commit on the base again")
	pr, err := g.forge.Get(chatPR)
	require.NoError(t, err)
	require.Contains(t, pr.Body, "- [ ] <!-- gpu-rightsizing:rebase -->", "unticked once done")
	rep = g.publish(src, at, publish.Options{})
	require.Equal(t, publish.Unchanged, outcomes(rep)[chat], "asked once, done once")

	// A person closes translate's pull request unmerged, then asks again.
	translatePR := prNumber(t, g, "gpu-rightsizing/inference/translate")
	require.NoError(t, g.forge.SetState(translatePR, scm.Closed, ""))
	rep = g.publish(src, at, publish.Options{})
	require.Equal(t, publish.Declined, outcomes(rep)[translate])
	tick(t, g, translatePR, "<!-- gpu-rightsizing:retry -->")
	rep = g.publish(src, at, publish.Options{})
	require.Equal(t, publish.Opened, outcomes(rep)[translate], "%v", rep.Results)
	rep = g.publish(src, at, publish.Options{})
	require.Equal(t, publish.Unchanged, outcomes(rep)[translate], "the new pull request decides now")
}

// A box counts only ticked, as a list item, with the tool's marker right
// after it; the same marker as text from a repository is escaped in the
// body and never reads as a box.
func TestAskedIn(t *testing.T) {
	const m = "<!-- gpu-rightsizing:rebase -->"
	for _, tt := range []struct {
		name string
		body string
		want bool
	}{
		{name: "ticked", body: "x\n- [x] " + m + " Make it afresh\n", want: true},
		{name: "ticked, capital X, star bullet, indented", body: "  * [X] " + m + "\n", want: true},
		{name: "not ticked", body: "- [ ] " + m + "\n"},
		{name: "another box", body: "- [x] <!-- gpu-rightsizing:retry -->\n"},
		{name: "not at the start of a line", body: "see - [x] " + m + "\n"},
		{name: "escaped, as a cell escapes text", body: "- [x] " + publish.Cell(m) + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, publish.AskedIn(tt.body, m))
		})
	}
}
