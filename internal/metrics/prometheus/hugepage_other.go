//go:build !linux

package prometheus

import "github.com/gpu-rightsizing/recommender/internal/usage"

// adviseHuge does nothing where huge pages are not asked for this way.
func adviseHuge([]usage.Sample) {}
