//go:build !race

package helm

// raceDetector: see race_on.go.
const raceDetector = false
