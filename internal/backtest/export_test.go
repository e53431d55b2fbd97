package backtest

// PlotFile is plotFile, for the tests of the file names a trace's
// workload can get.
var PlotFile = plotFile

// LoadEngine is loadEngine, for the tests of which namespace a trace is
// replayed in.
var LoadEngine = loadEngine
