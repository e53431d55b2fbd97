package metrics

import "errors"

// ErrBadQuery marks a query that no source can answer, whatever its data:
// a missing evaluation time, a non-positive lookback, an incomplete metric
// mapping. Callers should fix the query (or the policy it came from) rather
// than retry.
var ErrBadQuery = errors.New("bad usage query")
