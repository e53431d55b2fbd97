//go:build !unix

package localfile

// openFlags adds nothing where O_NONBLOCK does not exist; the type check
// after opening still keeps special files out.
const openFlags = 0
