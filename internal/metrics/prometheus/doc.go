// Package prometheus reads usage from a live server with Prometheus' HTTP
// API: Prometheus, Thanos, Mimir or VictoriaMetrics.
//
// It asks for raw samples in a few batched, retried range requests, each
// read in pieces sized from the answers before. Answers are decoded as they
// stream in, under a size bound. metrics.Set answers a usage.Query from
// them, as it does for a recording.
//
// It is one job, reading a server's answers into series, in more lines
// than most packages: half of them are the streaming decoder and the
// room its samples are kept in, which only this job needs.
package prometheus
