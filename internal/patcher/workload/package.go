// Package workload is what the editor knows of a GPU workload, and the
// types its parts share. It reads a workload from its document (the kinds
// it sizes and where their pod templates are, the GPU request as KAI
// reads it, the containers and vLLM's flags), and edits one through
// package splice: an Edit is the Ops wanted on one workload, each Op a
// small filter on the pod template that says which fields it touches, and
// a FileEdit applies Edits to a file all or nothing, each checked against
// KAI's rules as a whole. Result, Refusal, Note and Problem are what
// every origin of a workload (a plain file, a kustomization, a chart
// release) reports in; the files changed are package changes'.
//
// It is one job in about 2,900 lines: reading a workload and editing it
// apply the same rules to the same fields. Which container gets the GPU,
// KAI's annotations, vLLM's flag spellings and each kind's pod paths
// serve both, so the two share those helpers instead of exporting them.
package workload
