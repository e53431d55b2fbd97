// Package helm finds the workloads chart releases render (Argo CD
// Applications, Flux HelmReleases and kustomize's helmCharts, of charts in
// the checkout) and edits them in the values that set them. Releases are
// rendered with the Helm SDK in a child process of the same executable,
// within a time limit and memory bounds; a rendered field is traced to
// the one value that sets it alone, by rendering, and the edit of that
// value is proven by rendering every release that reads the edited file.
package helm
