// Package metrics is where GPU usage comes from: it turns stored time series
// into usage.Result values for the decision engine.
//
// Recorded reads a file in the OpenMetrics text format that
// `promtool tsdb create-blocks-from openmetrics` accepts, with a timestamp on
// every sample, and answers usage queries from it. Backtests replay such a
// recording at many evaluation times, so it never returns a sample newer
// than the query's evaluation time, and it keeps its indexes so repeated
// queries stay cheap.
package metrics
