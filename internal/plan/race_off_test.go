//go:build !race

package plan

const raceDetector = false
