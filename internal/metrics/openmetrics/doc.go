// Package openmetrics reads recorded usage: a file in the OpenMetrics text
// format that `promtool tsdb create-blocks-from openmetrics` accepts, with
// a timestamp on every sample, parsed as promtool parses it and held to
// the stricter rules of OpenMetrics where promtool lets a file pass.
//
// Recorded is the usage source over such a file. It reads the file as a
// stream, keeping only what its options ask for, and answers queries
// through metrics.Set, the code a live server's answers go through too.
// Backtests replay a recording at many evaluation times; Span says which
// times the file covers, leaving out the stragglers a wrong clock writes.
package openmetrics
