package kustomize

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// localOnly says why a kustomization reaches beyond the checkout, nil when
// everything it names is a file or directory the checkout read. kustomize
// fetches what it cannot find locally (git clones, HTTP downloads, Helm
// chart pulls): a repository must never make the tool reach the network
// or write outside the checkout, so such a kustomization is not built.
func localOnly(k *kust, files map[string][]byte, dirs map[string]bool) error {
	kz := &k.k
	if len(kz.HelmCharts) > 0 || len(kz.HelmChartInflationGenerator) > 0 {
		return fmt.Errorf("%w: %s inflates Helm charts, which kustomize would fetch and run: not built", ErrKustomize, k.file)
	}
	refs := k.refs()
	for _, r := range refs {
		if remoteSpec(r) {
			return fmt.Errorf("%w: %s names %q, which kustomize reads as a remote repository and would fetch with git (even where a directory of that name exists): not built",
				ErrKustomize, k.file, r)
		}
		if !local(r) {
			return fmt.Errorf("%w: %s names %q, which is not in the checkout (remote resources are never fetched): not built",
				ErrKustomize, k.file, r)
		}
		if !exists(path.Join(k.dir, r), files, dirs) {
			return fmt.Errorf("%w: %s names %q, which is not a file or directory of the checkout: not built",
				ErrKustomize, k.file, r)
		}
	}
	return nil
}

// refs are the paths and URLs k names: resources, patches, generators'
// files, and the like (not inline YAML).
func (k *kust) refs() []string {
	var refs []string
	add := func(ss ...string) {
		for _, s := range ss {
			if s != "" && !strings.Contains(s, "\n") { // inline YAML is no path
				refs = append(refs, s)
			}
		}
	}
	kz := &k.k
	add(kz.Resources...)
	add(kz.Components...)
	//lint:ignore SA1019 kustomizations in use still have it, and kustomize reads it
	add(kz.Bases...)
	add(kz.Crds...)
	add(kz.Configurations...)
	add(kz.Generators...)
	add(kz.Transformers...)
	add(kz.Validators...)
	for _, p := range kz.Patches {
		add(p.Path)
	}
	//lint:ignore SA1019 kustomizations in use still have it, and kustomize reads it
	for _, p := range kz.PatchesStrategicMerge {
		add(string(p))
	}
	//lint:ignore SA1019 kustomizations in use still have it, and kustomize reads it
	for _, p := range kz.PatchesJson6902 {
		add(p.Path)
	}
	for _, r := range kz.Replacements {
		add(r.Path)
	}
	for _, g := range kz.ConfigMapGenerator {
		add(sources(g.FileSources)...)
		add(g.EnvSources...)
		add(g.EnvSource)
	}
	for _, g := range kz.SecretGenerator {
		add(sources(g.FileSources)...)
		add(g.EnvSources...)
		add(g.EnvSource)
	}
	if p := kz.OpenAPI["path"]; p != "" {
		add(p)
	}
	return refs
}

// generatorSources are the files k's generators read.
func (k *kust) generatorSources() []string {
	var out []string
	for _, g := range k.k.ConfigMapGenerator {
		out = append(out, sources(g.FileSources)...)
		out = append(out, g.EnvSources...)
		if g.EnvSource != "" {
			out = append(out, g.EnvSource)
		}
	}
	for _, g := range k.k.SecretGenerator {
		out = append(out, sources(g.FileSources)...)
		out = append(out, g.EnvSources...)
		if g.EnvSource != "" {
			out = append(out, g.EnvSource)
		}
	}
	return out
}

// sources are the file paths of a generator's `files:` entries, which may
// be key=path.
func sources(fs []string) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		if _, p, ok := strings.Cut(f, "="); ok {
			f = p
		}
		out = append(out, f)
	}
	return out
}

// remoteSpec reports whether kustomize's loader would take r for a git
// repository to clone before trying it as a local path: the forms its
// repository-spec parser accepts (kustomize api v0.21, internal/git):
// a "git::" prefix, an ssh, https, http or file scheme (any case), an
// scp-like "user@host:" and a bare "github.com/" or "github.com:" (any
// case). Refusing the prefix is enough: kustomize would run git for any
// of these that parses, and a local directory named like one is refused
// with it.
func remoteSpec(r string) bool {
	l := strings.ToLower(r)
	for _, p := range []string{"git::", "ssh://", "https://", "http://", "file://", "github.com/", "github.com:"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return scpUser.MatchString(r)
}

// scpUser is the user name kustomize recognises in front of an scp-like
// repository spec.
var scpUser = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@`)

// local reports whether a reference reads as a path kustomize resolves in
// the file system: no scheme, no git repository spec, not absolute.
func local(r string) bool {
	switch {
	case path.IsAbs(r), strings.Contains(r, "://"), strings.Contains(r, "//"), strings.Contains(r, "?"),
		strings.HasPrefix(r, "git@"), strings.HasPrefix(r, "git::"), strings.HasPrefix(r, "ssh:"):
		return false
	}
	return true
}

// exists reports whether p is a file the checkout read, or a directory
// holding one: one of dirs, from dirsOf(files).
func exists(p string, files map[string][]byte, dirs map[string]bool) bool {
	p = path.Clean(p)
	if strings.HasPrefix(p, "../") || p == ".." {
		return false
	}
	_, ok := files[p]
	return ok || dirs[p]
}

// dirsOf are the directories that hold files, at any depth, but the
// root. Made once: looking through every file for each reference was
// quadratic in a repository of thousands of overlays.
func dirsOf(files map[string][]byte) map[string]bool {
	dirs := map[string]bool{}
	for f := range files {
		for d := path.Dir(f); d != "." && d != "/" && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	return dirs
}
