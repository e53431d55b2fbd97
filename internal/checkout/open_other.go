//go:build !unix

package checkout

// openFlags adds nothing where O_NONBLOCK does not exist; there the type
// checks before and after opening are what keep special files out.
const openFlags = 0
