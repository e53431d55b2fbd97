// Package prometheus reads usage from a live server with Prometheus' HTTP
// API: Prometheus, Thanos, Mimir or VictoriaMetrics.
//
// It asks for raw samples in a few batched, retried range requests, each
// read in pieces sized from the answers before. Answers are decoded as they
// stream in, under a size bound. metrics.Set answers a usage.Query from
// them, as it does for a recording.
package prometheus
