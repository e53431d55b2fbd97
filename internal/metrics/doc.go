// Package metrics is where GPU usage comes from: it turns stored time series
// into usage.Result values for the decision engine.
//
// A Set holds series by metric name and answers usage queries from them
// alone, attributing pods to workloads through kube-state-metrics' owner
// series or, for a recording without them, the pod-name pattern of each
// workload kind. Both sources build one: package openmetrics from a
// recorded file, package prometheus from the raw samples a live server
// returns, so that a recording and the server it is backfilled into give
// the same usage.
//
// Backtests replay a recording at many evaluation times, so a Set never
// returns a sample newer than the query's evaluation time, and it keeps its
// indexes so repeated queries stay cheap.
package metrics
