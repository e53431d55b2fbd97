// Package clustermap drafts a ClusterMap from the GitOps objects of a
// checkout, for `recommender clusters suggest`. It is help, not truth:
// the map a run uses is the one committed to the repository, checked by
// the policy loader.
//
// It resolves two layouts. Flux's Kustomizations
// (kustomize.toolkit.fluxcd.io) in clusters/<name>/ give that cluster
// clusters/<name> and each literal spec.path; Kustomizations found under
// those paths give theirs too. Argo CD's Applications give the cluster
// of spec.destination (name, else server) each spec.source.path and
// spec.sources[].path.
//
// What it cannot resolve it names, each at its file and line, and leaves
// out: ApplicationSets (their generators choose clusters and paths when
// Argo CD runs), ${...} substitutions, sources that are not this
// checkout (ExternalArtifact, ArtifactGenerator, OCI, buckets, charts of
// a registry), and paths outside the checkout or holding none of its files.
package clustermap
