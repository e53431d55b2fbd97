package clustermap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-rightsizing/recommender/internal/policy"
)

// apiVersion and mapName are what the draft's header says; a team
// renames the map as it likes.
var apiVersion = policy.ProjectGroup + "/v1alpha1"

const mapName = "fleet"

// ErrNothing is WriteYAML's error for a draft without a cluster: a map
// must name one, so there is nothing to print.
var ErrNothing = errors.New("no cluster resolved, so no map to suggest")

// WriteYAML writes the draft as a ClusterMap document, with comments
// saying where each path came from and what to check before committing
// it. The unresolved objects are not in it: the caller prints them.
func (s *Suggestion) WriteYAML(w io.Writer) error {
	if len(s.Clusters) == 0 {
		return ErrNothing
	}
	var b bytes.Buffer
	b.WriteString("# Drafted by `recommender clusters suggest`: check it before committing it.\n")
	b.WriteString("# spec.label is the store's label that tells the clusters apart;\n")
	b.WriteString("# each labelValue is that label's value for the cluster (the name when left out).\n")
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\nspec:\n  label: %s\n  clusters:\n",
		apiVersion, policy.KindClusterMap, mapName, policy.DefaultClusterLabel)
	for _, c := range s.Clusters {
		if c.Named != "" {
			fmt.Fprintf(&b, "    # named from %s\n", oneLine(c.Named))
		}
		fmt.Fprintf(&b, "    - name: %s\n      paths:\n", c.Name)
		for i, p := range c.Paths {
			q, err := scalar(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "        - %s # %s\n", q, oneLine(c.From[i]))
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// scalar is s as a YAML scalar, quoted when it must be.
func scalar(s string) (string, error) {
	out, err := yaml.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", s, err)
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

// oneLine keeps a comment on its line whatever a name holds.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}
