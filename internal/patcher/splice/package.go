// Package splice edits YAML files without re-serialising them. It knows
// YAML text, not workloads: a File holds one file's bytes, cut into chunks
// of whole documents, and the documents it is expected to parse to;
// File.EditDoc runs Steps on one document, and the primitives of Doc
// (SetString, ReplaceScalar, InsertEntry, DeleteEntry, AppendItem,
// EditInScalar, SetPath, ReplaceBlock, AppendPatch) splice bytes into the
// text and make the same change to the expected tree in one stroke. After
// each step its chunk is parsed again and compared with the expected
// tree, and every comment outside what the step meant to remove must
// still be there, in order; any difference refuses the step and leaves
// the file as it was (docs/design.md §10, invariant 2). Comments, key order,
// quoting, indentation, blank lines, trailing whitespace, document
// separators, CRLF line endings, a byte order mark and a missing final
// newline survive because those bytes are never touched.
//
// A batch (NewParsedFile, NewHeldFile) runs every step of a file against
// one parse and proves the result once in Finish; a held file, from what
// discovery kept (Hold), parses only the documents edited, each alone. An
// edited held document whose splices all swap scalars in place is not
// parsed: its parse is made from the old one, each new scalar read apart
// (predict; design.md §10 says why that is as strong).
//
// The editors of workloads, kustomizations and values files are built on
// it, and say what the changes are for.
//
// It is one job in about 3,000 lines: a splice and its proof. Finding
// spans, rendering scalars, keeping comments and parsing the result again
// serve every primitive, so they stay with them.
package splice
