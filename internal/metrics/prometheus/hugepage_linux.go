package prometheus

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// hugePage is the size of a huge page on the usual Linux systems.
const hugePage = 2 << 20

// adviseHuge asks the kernel to back the whole huge pages of xs' room
// with huge pages (where transparent huge pages are "madvise", the
// default of most distributions). It is advice: a kernel that refuses it
// changes nothing but the page faults.
func adviseHuge(xs []usage.Sample) {
	size := cap(xs) * int(unsafe.Sizeof(usage.Sample{}))
	if size < 2*hugePage {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(xs[:cap(xs)]))), size)
	p := uintptr(unsafe.Pointer(&b[0]))
	lo := int((hugePage - p%hugePage) % hugePage)
	hi := lo + (size-lo)/hugePage*hugePage
	_ = unix.Madvise(b[lo:hi], unix.MADV_HUGEPAGE)
}
