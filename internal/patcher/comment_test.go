package patcher

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

func TestComments(t *testing.T) {
	src := "# head\n" +
		"a: \"x # not\" # one\n" +
		"b: 'y # not'\t# two\n" +
		"c: z#not # three\n" +
		"d: |  # four\n" +
		"  body # not\n" +
		"  # not either\n" +
		"# five\n" +
		"e: &x !!str \"q # not\"\n" +
		"f: [g, # six\n" +
		"  h]\n" +
		"i: >2\n" +
		"   folded # not\n" +
		"j: \"multi\n" +
		"  # not\"\n"
	s, err := parseStream([]byte(src))
	require.NoError(t, err)
	cs, err := s.comments()
	require.NoError(t, err)
	var got []string
	for _, c := range cs {
		require.Equal(t, c.text, src[c.off:c.end])
		got = append(got, c.text)
	}
	require.Equal(t, []string{"# head", "# one", "# two", "# three", "# four", "# five", "# six"}, got)
}

// oldFlowDelete removes a flow mapping entry the way deleteEntry once did:
// from the end of the previous value, which takes the comments between
// the two entries with it. It declares only the entry as removed.
type oldFlowDelete struct{ key string }

func (o oldFlowDelete) String() string { return "oldFlowDelete(" + o.key + ")" }

func (o oldFlowDelete) apply(d *podEdit) error {
	ann := lookup(d.root, "spec", "template", "metadata", "annotations")
	k, v := field(ann, o.key)
	_, pe, err := d.sp.span(ann.Content[indexOf(ann.Content, k)-1])
	if err != nil {
		return err
	}
	ks, err := d.sp.entryStart(k)
	if err != nil {
		return err
	}
	_, ve, err := d.sp.span(v)
	if err != nil {
		return err
	}
	d.splices = append(d.splices, splice{off: pe, end: ve})
	d.removed = append(d.removed, [2]int{ks, ve})
	em, err := d.expNode(ann)
	if err != nil {
		return err
	}
	_, err = yaml.NewRNode(em).Pipe(yaml.Clear(o.key))
	return err
}

// An op that loses a comment outside what it means to remove is refused,
// even though the result parses to the intended tree.
func TestApplyRefusesALostComment(t *testing.T) {
	src := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    metadata:
      annotations: {
        prometheus.io/scrape: "true",  # scrape me
        gpu-fraction: "0.5"
      }
    spec:
      containers: [{name: c, image: x}]
`
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "d.yaml"), []byte(src), 0o644))
	ctx := context.Background()
	inv, err := Discover(ctx, root)
	require.NoError(t, err)
	ref := usage.Ref{Kind: "Deployment", Name: "app"}
	res, err := Apply(ctx, root, inv, []Edit{{Workload: ref, Ops: []Op{oldFlowDelete{key: "gpu-fraction"}}}})
	require.NoError(t, err)
	require.Empty(t, res.Files)
	require.Len(t, res.Refused, 1)
	require.ErrorIs(t, res.Refused[0].Err, ErrVerify)
	require.ErrorContains(t, res.Refused[0].Err, `the comment "# scrape me" is lost`)

	// The op itself keeps it.
	res, err = Apply(ctx, root, inv, []Edit{{Workload: ref, Ops: []Op{RemovePodAnnotation("gpu-fraction")}}})
	require.NoError(t, err)
	require.Empty(t, res.Refused)
	require.Len(t, res.Files, 1)
	require.Contains(t, string(res.Files[0].New), "      annotations: {\n        prometheus.io/scrape: \"true\"  # scrape me\n      }\n")
}
