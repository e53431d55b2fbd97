// Package metrics is where GPU usage comes from: it turns stored time series
// into usage.Result values for the decision engine.
//
// Recorded reads a file in the OpenMetrics text format that
// `promtool tsdb create-blocks-from openmetrics` accepts, with a timestamp on
// every sample, and answers usage queries from it. Backtests replay such a
// recording at many evaluation times, so it never returns a sample newer
// than the query's evaluation time, and it keeps its indexes so repeated
// queries stay cheap.
//
// Prometheus reads the same raw samples from a live server with
// Prometheus' HTTP API, in a few batched requests per query, and answers
// with the same code (seriesSet), so that a recording and the server it is
// backfilled into give the same usage.
package metrics
