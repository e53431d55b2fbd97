// Package arch holds no code: its tests check the shape of the module,
// that dependencies point the way docs/design.md §2 draws them (the decision math
// imports no I/O, nothing low imports anything high) and that
// docs/project-layout.md names every package there is.
package arch
