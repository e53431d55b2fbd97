//go:build cgo

package helm

// cgoThreads: with cgo, each thread the runtime starts is a pthread,
// whose stack the C library maps at its full size at once. RLIMIT_AS
// counts those mappings, so a child's bound leaves room for them.
const cgoThreads = true
