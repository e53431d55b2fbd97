//go:build race

package plan

// raceDetector: under the race detector sync.Pool drops what it holds at
// random, and encoding/json allocates anew what its pool would give.
const raceDetector = true
