// Package arch holds no code: its tests check the shape of the module.
// Dependencies point the way docs/design.md §2 draws them (the decision
// math imports no I/O, nothing low imports anything high), and
// docs/project-layout.md names every package there is. No function is
// past its bounds, and no package past about 2,500 lines, unless it says
// why (testdata/exceptions.txt; a package's doc comment). The documents
// people read keep short sentences and table cells, or are listed with
// their figures and why (testdata/docs-exceptions.txt).
package arch
