package prometheus

import "github.com/gpu-rightsizing/recommender/internal/usage"

// slab is the room of a table's series, carved one after another from
// chunks rather than each allocated alone, so that the chunks can be
// backed by huge pages where the system offers them (adviseHuge): the
// samples of 10,000 pods over two hours took a page fault each 256
// samples, about a sixth of the client's CPU. A room carved last is
// grown or shrunk in place.
type slab struct {
	// chunk is the chunk being carved; its length is what is carved.
	chunk []usage.Sample
}

const (
	// firstChunk and lastChunk bound a chunk, in samples (64 KiB and
	// 16 MiB): each chunk is twice the one before, and four times the
	// room it is made for.
	firstChunk = 4 << 10
	lastChunk  = 1 << 20
	// maxCarve is the most room carved; more is allocated alone.
	maxCarve = lastChunk / 16
)

// resize returns xs with room for c samples, c ≥ len(xs): in place when
// xs is the room carved last and its chunk has the room, else carved
// anew (allocated alone past maxCarve) and copied.
func (sl *slab) resize(xs []usage.Sample, c int) []usage.Sample {
	n := len(xs)
	if m := len(sl.chunk); cap(xs) > 0 && m > 0 && &xs[:cap(xs)][cap(xs)-1] == &sl.chunk[m-1] {
		if start := m - cap(xs); start+c <= cap(sl.chunk) {
			sl.chunk = sl.chunk[:start+c]
			return sl.chunk[start : start+n : start+c]
		}
	}
	if c > maxCarve {
		out := make([]usage.Sample, n, c)
		copy(out, xs)
		return out
	}
	if cap(sl.chunk)-len(sl.chunk) < c {
		sl.chunk = make([]usage.Sample, 0, min(max(2*cap(sl.chunk), firstChunk, 4*c), lastChunk))
		adviseHuge(sl.chunk)
	}
	start := len(sl.chunk)
	sl.chunk = sl.chunk[:start+c]
	out := sl.chunk[start : start+n : start+c]
	copy(out, xs)
	return out
}
