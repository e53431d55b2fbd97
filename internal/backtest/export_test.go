package backtest

// PlotFile is plotFile, for the tests of the file names a trace's
// workload can get.
var PlotFile = plotFile

// NewResamples builds a bootstrap distribution from given sorted resampled
// means, for tests of the correction.
func NewResamples(mean []float64, sorted [][]float64) Resamples {
	return Resamples{Mean: mean, sorted: sorted}
}

// LoadEngine is loadEngine, for the tests of which namespace a trace is
// replayed in.
var LoadEngine = loadEngine

// RecordedTraces is recordedTraces, for the tests of a recording of
// several clusters.
var RecordedTraces = recordedTraces
