package engine

// Percentile exposes rank to the external tests.
var Percentile = rank
