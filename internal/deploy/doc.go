// Package deploy holds no code: its tests check what installs the
// recommender in a cluster — the Helm chart in charts/recommender, the
// Dockerfile and the examples — since CI has neither a cluster nor a
// Docker engine to try them on.
package deploy
