package openmetrics

// Internals that the external tests check directly.
var (
	ParseValue     = parseValue
	ParseTimestamp = parseTimestamp
)
