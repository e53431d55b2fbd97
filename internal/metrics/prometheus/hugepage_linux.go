package prometheus

import (
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// hugePage is the size of a huge page on the usual Linux systems.
const hugePage = 2 << 20

// adviseHuge asks the kernel to back the whole huge pages of xs' room
// with huge pages (where transparent huge pages are "madvise", the
// default of most distributions). It is advice: a kernel that refuses it
// changes nothing but the page faults. GODEBUG=disablethp=1, which
// keeps the Go runtime's heap off huge pages, keeps these off too.
func adviseHuge(xs []usage.Sample) {
	size := cap(xs) * int(unsafe.Sizeof(usage.Sample{}))
	if size < 2*hugePage || thpDisabled(os.Getenv("GODEBUG")) {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(xs[:cap(xs)]))), size)
	p := uintptr(unsafe.Pointer(&b[0]))
	lo := int((hugePage - p%hugePage) % hugePage)
	hi := lo + (size-lo)/hugePage*hugePage
	_ = unix.Madvise(b[lo:hi], unix.MADV_HUGEPAGE)
}

// thpDisabled says whether a GODEBUG value sets disablethp=1; the last
// setting of a key wins, as in the runtime.
func thpDisabled(godebug string) bool {
	off := false
	for kv := range strings.SplitSeq(godebug, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == "disablethp" {
			off = v == "1"
		}
	}
	return off
}
