package backtest

// PlotFile is plotFile, for the tests of the file names a trace's
// workload can get.
var PlotFile = plotFile
