package changes

// DiffLines exposes diffLines to the external tests, which hand its lines
// to go-difflib to compare its diff with File.Diff.
var DiffLines = diffLines
