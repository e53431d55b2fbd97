package release_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/release"
)

func TestChartVersion(t *testing.T) {
	tests := []struct {
		name    string
		version string
		want    string
	}{
		{name: "a release tag", version: "v1.2.3", want: "1.2.3"},
		{name: "a release candidate", version: "v1.2.3-rc.1", want: "1.2.3-rc.1"},
		{name: "without the v", version: "0.4.0", want: "0.4.0"},
		{name: "a commit", version: "6f5cf78", want: "0.0.0-6f5cf78"},
		{name: "a dirty commit", version: "6f5cf78-dirty", want: "0.0.0-6f5cf78-dirty"},
		{name: "past a tag", version: "v1.2.3-4-g6f5cf78", want: "1.2.3-4-g6f5cf78"},
		{name: "a branch-like name", version: "dev/main+x", want: "0.0.0-dev-main-x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := release.ChartVersion(tt.version)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestChecksums(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b"), []byte("bee\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("hello\n"), 0o644))
	var sums bytes.Buffer
	require.NoError(t, release.Checksums(&sums, dir, []string{"b", "a"}))
	// sha256sum's own output for these files.
	require.Equal(t, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  a\n"+
		"c150e5a8a604acebd8d15bd7bf8ea96b2874bdcc91dee6319977d353251283b0  b\n", sums.String())

	tests := []struct {
		name string
		sums string
		err  string
	}{
		{name: "all hold", sums: sums.String()},
		{name: "a file changed", sums: "0000000000000000000000000000000000000000000000000000000000000000  a\n", err: "sums.txt:1: a: sha256"},
		{name: "a name outside", sums: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  ../a\n", err: "sums.txt:1: want"},
		{name: "a line that does not parse", sums: "5891b5 a\n", err: "sums.txt:1: want"},
		{name: "a missing file", sums: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  c\n", err: "sums.txt:1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "sums.txt")
			require.NoError(t, os.WriteFile(file, []byte(tt.sums), 0o644))
			names, err := release.VerifyChecksums(file, dir)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, []string{"a", "b"}, names)
		})
	}
}

// TestSBOM: an SBOM names the binary, its main module at the release's
// version, every module it was built with at its version (a
// replacement's where one is) and the standard library, each with its
// package URL; a file that is no Go binary is an error naming it.
func TestSBOM(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "example.com/tool", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "github.com/spf13/cobra", Version: "v1.10.2"},
			{Path: "k8s.io/api", Version: "v0.34.4", Replace: &debug.Module{Path: "example.com/fork/api", Version: "v0.34.5"}},
		}}
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	b, err := release.Document(info, "tool_linux_amd64", "ab12", "v9.9.9", created)
	require.NoError(t, err)
	var doc struct {
		SPDXVersion       string
		DocumentNamespace string
		CreationInfo      struct{ Created string }
		Packages          []struct {
			Name, SPDXID, VersionInfo string
			ExternalRefs              []struct{ ReferenceLocator string }
		}
		Relationships []struct{ SpdxElementID, RelationshipType, RelatedSpdxElement string }
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	require.Equal(t, "SPDX-2.3", doc.SPDXVersion)
	require.Equal(t, "https://example.com/tool/spdx/tool_linux_amd64-ab12", doc.DocumentNamespace)
	require.Equal(t, "2026-12-01T10:00:00Z", doc.CreationInfo.Created)
	type pkg struct{ name, version, purl string }
	var got []pkg
	for _, p := range doc.Packages {
		purl := ""
		if len(p.ExternalRefs) > 0 {
			purl = p.ExternalRefs[0].ReferenceLocator
		}
		got = append(got, pkg{p.Name, p.VersionInfo, purl})
	}
	require.Equal(t, []pkg{
		{"tool_linux_amd64", "v9.9.9", ""},
		{"example.com/tool", "v9.9.9", "pkg:golang/example.com/tool@v9.9.9"},
		{"github.com/spf13/cobra", "v1.10.2", "pkg:golang/github.com/spf13/cobra@v1.10.2"},
		{"example.com/fork/api", "v0.34.5", "pkg:golang/example.com/fork/api@v0.34.5"},
		{"stdlib", "go1.26.8", "pkg:golang/stdlib@go1.26.8"},
	}, got)
	require.Equal(t, "DESCRIBES", doc.Relationships[0].RelationshipType)
	require.Equal(t, doc.Packages[0].SPDXID, doc.Relationships[0].RelatedSpdxElement)

	notGo := filepath.Join(t.TempDir(), "script")
	require.NoError(t, os.WriteFile(notGo, []byte("#!/bin/sh\n"), 0o755))
	_, err = release.SBOM(release.Binary{Path: notGo}, created)
	require.ErrorContains(t, err, "sbom: "+notGo)
}
