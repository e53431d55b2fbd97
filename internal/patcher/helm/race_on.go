//go:build race

package helm

// raceDetector: the race detector maps shadow memory for the heap, which
// RLIMIT_AS counts too, so a child under it does not set the bound.
const raceDetector = true
