// Package release makes a release's artifacts beside its binaries: an
// SPDX 2.3 software bill of materials read from each binary's build
// information, the chart packaged with the release's version, and the
// SHA-256 checksums of them all. It is what `make release`
// (scripts/release.sh) runs through hack/release; building the binaries
// and the image is the script's.
package release

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"time"
)

// SPDX 2.3 in its JSON form: the fields this bill of materials fills.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name             string            `json:"name"`
	SPDXID           string            `json:"SPDXID"`
	VersionInfo      string            `json:"versionInfo"`
	DownloadLocation string            `json:"downloadLocation"`
	FilesAnalyzed    bool              `json:"filesAnalyzed"`
	PrimaryPurpose   string            `json:"primaryPackagePurpose,omitempty"`
	Checksums        []spdxChecksum    `json:"checksums,omitempty"`
	ExternalRefs     []spdxExternalRef `json:"externalRefs,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// Binary is a built executable and the version it was stamped with.
type Binary struct {
	Path    string
	Version string
}

// spdxIDRE matches what an SPDX identifier may not hold.
var spdxIDRE = regexp.MustCompile(`[^A-Za-z0-9.-]`)

// SBOM reads a binary's build information (the modules the go command
// linked into it, at their versions, replacements followed) and writes it
// as an SPDX 2.3 JSON document: the binary, its main module at the
// release's version, every module it depends on and the Go standard
// library, each with its package URL. created dates the document, so
// that a release made again from the same commit is the same.
func SBOM(b Binary, created time.Time) ([]byte, error) {
	info, err := buildinfo.ReadFile(b.Path)
	if err != nil {
		return nil, fmt.Errorf("sbom: %s: %w", b.Path, err)
	}
	sum, err := fileSHA256(b.Path)
	if err != nil {
		return nil, fmt.Errorf("sbom: %w", err)
	}
	return Document(info, filepath.Base(b.Path), sum, b.Version, created)
}

// Document is the SPDX document of a binary named file, whose SHA-256 is
// sum, built as info says.
func Document(info *debug.BuildInfo, file, sum, version string, created time.Time) ([]byte, error) {
	if info.Main.Path == "" {
		return nil, fmt.Errorf("sbom: %s: no main module in its build information", file)
	}
	id := func(kind, name string) string { return "SPDXRef-" + kind + "-" + spdxIDRE.ReplaceAllString(name, "-") }
	doc := spdxDocument{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT", Name: file,
		// Unique per binary and its content, as SPDX asks.
		DocumentNamespace: "https://" + info.Main.Path + "/spdx/" + file + "-" + sum,
		CreationInfo: spdxCreationInfo{Created: created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: " + info.Main.Path + "/hack/release"}},
	}
	binID := id("File", file)
	doc.Packages = append(doc.Packages, spdxPackage{Name: file, SPDXID: binID, VersionInfo: version, DownloadLocation: "NOASSERTION",
		PrimaryPurpose: "APPLICATION", Checksums: []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: sum}}})
	doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", binID})
	module := func(m *debug.Module, v string) string {
		pid := id("Module", m.Path)
		doc.Packages = append(doc.Packages, spdxPackage{Name: m.Path, SPDXID: pid, VersionInfo: v,
			DownloadLocation: "NOASSERTION", PrimaryPurpose: "LIBRARY",
			ExternalRefs: []spdxExternalRef{purl(m.Path, v)}})
		return pid
	}
	mainID := module(&info.Main, version)
	doc.Packages[len(doc.Packages)-1].DownloadLocation = "git+https://" + info.Main.Path + "@" + version
	doc.Relationships = append(doc.Relationships, spdxRelationship{binID, "GENERATED_FROM", mainID})
	for _, dep := range info.Deps {
		m := dep
		if dep.Replace != nil {
			m = dep.Replace
		}
		doc.Relationships = append(doc.Relationships, spdxRelationship{mainID, "DEPENDS_ON", module(m, m.Version)})
	}
	goVersion := info.GoVersion
	stdID := id("Module", "stdlib")
	doc.Packages = append(doc.Packages, spdxPackage{Name: "stdlib", SPDXID: stdID, VersionInfo: goVersion,
		DownloadLocation: "https://go.dev/dl/", PrimaryPurpose: "LIBRARY",
		ExternalRefs: []spdxExternalRef{purl("stdlib", goVersion)}})
	doc.Relationships = append(doc.Relationships, spdxRelationship{mainID, "DEPENDS_ON", stdID})
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// purl is a Go module's package URL (github.com/package-url/purl-spec,
// type golang).
func purl(path, version string) spdxExternalRef {
	return spdxExternalRef{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl",
		ReferenceLocator: "pkg:golang/" + path + "@" + version}
}

func fileSHA256(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
