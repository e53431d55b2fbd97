package scm

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// A run that publishes to a repository on this machine writes its new
// objects as one pack, not as a file an object: a branch's commit
// rewrites every tree on its path, and a directory of 10,000 workloads is
// a tree of 320 KB, which a loose object deflates whole and the push
// then reads back, for each branch. In the pack such a tree is a delta on
// the base's tree that says which entries changed; its hash still covers
// every byte, read from the base's tree where they did not change.

// The pack entry types the run writes.
const (
	packCommit   = 1
	packTree     = 2
	packBlob     = 3
	packOfsDelta = 6
)

// deltaMin is the smallest base tree a new tree is a delta on: below it
// the whole tree costs less than carrying the base in the pack.
const deltaMin = 1024

// packWriter holds a pack being written in memory: a few hundred bytes a
// branch, as the trees are deltas.
type packWriter struct {
	body bytes.Buffer // the entries, after the 12-byte header
	objs []packed
	at   map[plumbing.Hash]int64 // offset of each object in the pack
	// commits are the commits of the pack, which reach only its objects
	// and the base's.
	commits map[plumbing.Hash]bool
	zw      *zlib.Writer
	hdr     []byte
}

type packed struct {
	hash   plumbing.Hash
	offset int64
	crc    uint32
}

func newPackWriter() *packWriter {
	zw, _ := zlib.NewWriterLevel(io.Discard, zlib.BestSpeed)
	return &packWriter{at: map[plumbing.Hash]int64{}, commits: map[plumbing.Hash]bool{}, zw: zw}
}

// objectHash is git's name of an object of type t whose content is parts.
func objectHash(t plumbing.ObjectType, size int, parts ...[]byte) plumbing.Hash {
	h := sha1.New()
	writeHeader(h, t, size)
	for _, p := range parts {
		h.Write(p)
	}
	var out plumbing.Hash
	copy(out[:], h.Sum(nil))
	return out
}

func writeHeader(h hash.Hash, t plumbing.ObjectType, size int) {
	h.Write([]byte(t.String()))
	h.Write([]byte{' '})
	h.Write(strconv.AppendInt(nil, int64(size), 10))
	h.Write([]byte{0})
}

// entry appends one pack entry: its header, then data deflated.
func (p *packWriter) entry(h plumbing.Hash, kind byte, size int, ofs int64, data []byte) error {
	start := int64(p.body.Len())
	hdr := p.hdr[:0]
	b := kind<<4 | byte(size&0x0f)
	for s := size >> 4; s > 0; s >>= 7 {
		hdr = append(hdr, b|0x80)
		b = byte(s & 0x7f)
	}
	hdr = append(hdr, b)
	if kind == packOfsDelta {
		// The distance back to the base, big-endian, each byte but the
		// last one less than it says (git's encoding).
		d := start + packHeaderLen - ofs
		var tmp [10]byte
		i := len(tmp) - 1
		tmp[i] = byte(d & 0x7f)
		for d >>= 7; d > 0; d >>= 7 {
			d--
			i--
			tmp[i] = 0x80 | byte(d&0x7f)
		}
		hdr = append(hdr, tmp[i:]...)
	}
	p.hdr = hdr
	p.body.Write(hdr)
	p.zw.Reset(&p.body)
	if _, err := p.zw.Write(data); err != nil {
		return err
	}
	if err := p.zw.Close(); err != nil {
		return err
	}
	crc := crc32.ChecksumIEEE(p.body.Bytes()[start:])
	p.objs = append(p.objs, packed{hash: h, offset: start + packHeaderLen, crc: crc})
	p.at[h] = start + packHeaderLen
	return nil
}

const packHeaderLen = 12

// add puts a whole object in the pack, once, and returns its hash.
func (p *packWriter) add(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	h := objectHash(t, len(data), data)
	if _, ok := p.at[h]; ok {
		return h, nil
	}
	var kind byte
	switch t {
	case plumbing.CommitObject:
		kind = packCommit
		p.commits[h] = true
	case plumbing.TreeObject:
		kind = packTree
	case plumbing.BlobObject:
		kind = packBlob
	default:
		return plumbing.ZeroHash, fmt.Errorf("no pack type for %s", t)
	}
	return h, p.entry(h, kind, len(data), 0, data)
}

// addTreeDelta puts in the pack the tree that is base with the edits
// segs make, as a delta on base (which goes in first, whole), and
// returns its hash; a tree the same as base is not written.
func (p *packWriter) addTreeDelta(base *baseTree, all []segment) (plumbing.Hash, error) {
	segs := all
	size := 0
	for _, s := range segs {
		size += s.len()
	}
	h, segs := base.hashFrom(size, segs)
	for _, s := range segs {
		h.Write(s.bytes(base.raw))
	}
	var out plumbing.Hash
	copy(out[:], h.Sum(nil))
	if _, ok := p.at[out]; ok || out == base.hash {
		return out, nil
	}
	if len(base.raw) < deltaMin {
		var whole []byte
		for _, s := range all {
			whole = append(whole, s.bytes(base.raw)...)
		}
		return p.add(plumbing.TreeObject, whole)
	}
	if _, ok := p.at[base.hash]; !ok {
		if _, err := p.add(plumbing.TreeObject, base.raw); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	d := delta(len(base.raw), size, all)
	return out, p.entry(out, packOfsDelta, len(d), p.at[base.hash], d)
}

// segment is a run of a new tree's bytes: from the base's bytes
// [from, to), or, when data is set, those bytes.
type segment struct {
	from, to int
	data     []byte
}

func (s segment) len() int {
	if s.data != nil {
		return len(s.data)
	}
	return s.to - s.from
}

func (s segment) bytes(base []byte) []byte {
	if s.data != nil {
		return s.data
	}
	return base[s.from:s.to]
}

// delta is git's delta from a base of srcLen bytes to the new object
// segs make: copies of the base's runs, the rest inserted.
func delta(srcLen, dstLen int, segs []segment) []byte {
	out := binary.AppendUvarint(nil, uint64(srcLen))
	out = binary.AppendUvarint(out, uint64(dstLen))
	for _, s := range segs {
		if s.data != nil {
			for d := s.data; len(d) > 0; {
				n := min(len(d), 0x7f)
				out = append(out, byte(n))
				out = append(out, d[:n]...)
				d = d[n:]
			}
			continue
		}
		for off := s.from; off < s.to; {
			n := min(s.to-off, 0x10000)
			op := len(out)
			out = append(out, 0x80)
			for i := range 4 {
				if b := byte(off >> (8 * i)); b != 0 {
					out[op] |= 1 << i
					out = append(out, b)
				}
			}
			if n != 0x10000 {
				for i := range 3 {
					if b := byte(n >> (8 * i)); b != 0 {
						out[op] |= 0x10 << i
						out = append(out, b)
					}
				}
			}
			off += n
		}
	}
	return out
}

// write writes the pack and its index (version 2) into the objects
// directory objects, the pack first so that no reader finds an index
// without its pack, and returns the paths written.
func (p *packWriter) write(objects string) (pack, idx string, err error) {
	hdr := make([]byte, 0, packHeaderLen)
	hdr = append(hdr, "PACK"...)
	hdr = binary.BigEndian.AppendUint32(hdr, 2)
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(len(p.objs)))
	sum := sha1.New()
	sum.Write(hdr)
	sum.Write(p.body.Bytes())
	trailer := sum.Sum(nil)
	name := filepath.Join(objects, "pack", fmt.Sprintf("pack-%x", trailer))
	err = putObjectFile(name+".pack", func(w io.Writer) error {
		for _, b := range [][]byte{hdr, p.body.Bytes(), trailer} {
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", "", err
	}
	if err := putObjectFile(name+".idx", func(w io.Writer) error { return p.index(w, trailer) }); err != nil {
		return "", "", err
	}
	return name + ".pack", name + ".idx", nil
}

// index writes the pack's index, version 2: the names sorted with a
// fan-out table by first byte, their CRCs, their offsets (those past
// 2 GiB in a table of their own), the pack's checksum and its own.
func (p *packWriter) index(w io.Writer, packSum []byte) error {
	objs := slices.Clone(p.objs)
	slices.SortFunc(objs, func(a, b packed) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	var b bytes.Buffer
	b.Write([]byte{0xff, 't', 'O', 'c', 0, 0, 0, 2})
	var fan [256]uint32
	for _, o := range objs {
		fan[o.hash[0]]++
	}
	total := uint32(0)
	for i := range fan {
		total += fan[i]
		b.Write(binary.BigEndian.AppendUint32(nil, total))
	}
	for _, o := range objs {
		b.Write(o.hash[:])
	}
	for _, o := range objs {
		b.Write(binary.BigEndian.AppendUint32(nil, o.crc))
	}
	var large []uint64
	for _, o := range objs {
		off := uint32(o.offset)
		if o.offset >= 1<<31 {
			off = 1<<31 | uint32(len(large))
			large = append(large, uint64(o.offset))
		}
		b.Write(binary.BigEndian.AppendUint32(nil, off))
	}
	for _, l := range large {
		b.Write(binary.BigEndian.AppendUint64(nil, l))
	}
	b.Write(packSum)
	s := sha1.Sum(b.Bytes())
	b.Write(s[:])
	_, err := w.Write(b.Bytes())
	return err
}

// baseTree is a tree of the base, read once for all the commits of a
// run: its bytes and where each entry lies in them.
type baseTree struct {
	hash    plumbing.Hash
	raw     []byte
	entries []treeEntry
	byName  map[string]int
	// marks are the states of the hash of the base's bytes every
	// markEvery bytes: a new tree of the same size that begins as the
	// base does takes up its hash from the last mark before it differs.
	marks []hash.Cloner
}

const markEvery = 8 << 10

// hashFrom is the hash of a new tree of size bytes, segs, with as much
// of segs already written as the marks allow, and the segments left.
func (t *baseTree) hashFrom(size int, segs []segment) (hash.Hash, []segment) {
	h := sha1.New()
	writeHeader(h, plumbing.TreeObject, size)
	if size != len(t.raw) || len(t.raw) < 2*markEvery || len(segs) == 0 || segs[0].data != nil || segs[0].from != 0 {
		return h, segs
	}
	if t.marks == nil {
		for off := 0; off < len(t.raw); off += markEvery {
			hc, ok := h.(hash.Cloner)
			var c hash.Cloner
			var err error
			if ok {
				c, err = hc.Clone()
			}
			if !ok || err != nil { // never: sha1's hashes clone
				t.marks = nil
				h = sha1.New()
				writeHeader(h, plumbing.TreeObject, size)
				return h, segs
			}
			t.marks = append(t.marks, c)
			h.Write(t.raw[off:min(off+markEvery, len(t.raw))])
		}
	}
	k := min(segs[0].to/markEvery, len(t.marks)-1)
	c, err := t.marks[k].Clone()
	if err != nil {
		h = sha1.New()
		writeHeader(h, plumbing.TreeObject, size)
		return h, segs
	}
	var from hash.Hash = c
	rest := slices.Clone(segs)
	rest[0].from = k * markEvery
	return from, rest
}

type treeEntry struct {
	name string
	mode filemode.FileMode
	hash plumbing.Hash
	// start is where the entry begins in raw, hashAt where its hash does.
	start, hashAt int
}

// key orders entries as git does: a directory as if its name ended in a
// slash.
func (e treeEntry) key() string {
	if e.mode == filemode.Dir {
		return e.name + "/"
	}
	return e.name
}

// parseTree reads a tree object's content.
func parseTree(h plumbing.Hash, raw []byte) (*baseTree, error) {
	t := &baseTree{hash: h, raw: raw, byName: map[string]int{}}
	for i := 0; i < len(raw); {
		sp := bytes.IndexByte(raw[i:], ' ')
		nul := bytes.IndexByte(raw[i:], 0)
		if sp < 0 || nul < sp || i+nul+1+20 > len(raw) {
			return nil, fmt.Errorf("tree %s: a malformed entry at byte %d", h, i)
		}
		mode, err := strconv.ParseUint(string(raw[i:i+sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("tree %s: the mode of the entry at byte %d: %w", h, i, err)
		}
		e := treeEntry{name: string(raw[i+sp+1 : i+nul]), mode: filemode.FileMode(mode), start: i, hashAt: i + nul + 1}
		copy(e.hash[:], raw[e.hashAt:e.hashAt+20])
		t.byName[e.name] = len(t.entries)
		t.entries = append(t.entries, e)
		i = e.hashAt + 20
	}
	return t, nil
}

// encodeEntry is a tree entry's bytes.
func encodeEntry(mode filemode.FileMode, name string, h plumbing.Hash) []byte {
	b := strconv.AppendUint(nil, uint64(mode), 8)
	b = append(b, ' ')
	b = append(b, name...)
	b = append(b, 0)
	return append(b, h[:]...)
}

// packTree puts in the run's pack the tree at dir (hash zero: a new
// directory) with edits made, and returns its hash; the checks are
// editTree's. A tree of the base is read once, and each rewrite of it
// costs its bytes' hash and a delta of the entries that changed.
func (r *Repo) packTree(h plumbing.Hash, dir string, e *treeEdit) (plumbing.Hash, error) {
	for name := range e.blobs {
		if _, ok := e.sub[name]; ok {
			return plumbing.ZeroHash, fmt.Errorf("%s is both a file and a directory of the commit", path.Join(dir, name))
		}
	}
	var base *baseTree
	if !h.IsZero() {
		var err error
		if base, err = r.baseTree(h, dir); err != nil {
			return plumbing.ZeroHash, err
		}
	} else {
		base = &baseTree{byName: map[string]int{}}
	}
	replace := map[int]plumbing.Hash{}
	var added []treeEntry
	for name, blob := range e.blobs {
		i, ok := base.byName[name]
		if !ok {
			added = append(added, treeEntry{name: name, mode: filemode.Regular, hash: blob})
			continue
		}
		if m := base.entries[i].mode; m != filemode.Regular && m != filemode.Executable && m != filemode.Deprecated {
			return plumbing.ZeroHash, fmt.Errorf("%s is not a regular file", path.Join(dir, name))
		}
		replace[i] = blob
	}
	for name, sub := range e.sub {
		i, ok := base.byName[name]
		if ok && base.entries[i].mode != filemode.Dir {
			return plumbing.ZeroHash, fmt.Errorf("%s is not a directory", path.Join(dir, name))
		}
		was := plumbing.ZeroHash
		if ok {
			was = base.entries[i].hash
		}
		t, err := r.packTree(was, path.Join(dir, name), sub)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if ok {
			replace[i] = t
		} else {
			added = append(added, treeEntry{name: name, mode: filemode.Dir, hash: t})
		}
	}
	slices.SortFunc(added, func(a, b treeEntry) int { return strings.Compare(a.key(), b.key()) })
	segs := splice(base, replace, added)
	if h.IsZero() {
		var whole []byte
		for _, s := range segs {
			whole = append(whole, s.bytes(nil)...)
		}
		return r.pack.add(plumbing.TreeObject, whole)
	}
	return r.pack.addTreeDelta(base, segs)
}

// splice is the new tree's bytes as segments: the base's bytes with each
// replaced entry's hash swapped and each added entry inserted where
// git's order puts it, before the first entry of the base that sorts
// after it.
func splice(base *baseTree, replace map[int]plumbing.Hash, added []treeEntry) []segment {
	type op struct {
		at   int
		data []byte
		skip int
	}
	var ops []op
	for i, nh := range replace {
		ops = append(ops, op{at: base.entries[i].hashAt, data: nh[:], skip: 20})
	}
	for _, a := range added {
		j, _ := slices.BinarySearchFunc(base.entries, a.key(), func(en treeEntry, k string) int { return strings.Compare(en.key(), k) })
		at := len(base.raw)
		if j < len(base.entries) {
			at = base.entries[j].start
		}
		ops = append(ops, op{at: at, data: encodeEntry(a.mode, a.name, a.hash)})
	}
	// Stable: added entries at one place stay in their order.
	slices.SortStableFunc(ops, func(x, y op) int { return x.at - y.at })
	var segs []segment
	pos := 0
	for _, o := range ops {
		if o.at > pos {
			segs = append(segs, segment{from: pos, to: o.at})
		}
		segs = append(segs, segment{data: o.data})
		pos = o.at + o.skip
	}
	if len(base.raw) > pos {
		segs = append(segs, segment{from: pos, to: len(base.raw)})
	}
	return segs
}

// flushPack writes the run's pack, when it holds anything, into the
// clone and the local remote (linked, where they share a file system),
// and returns its commits. Both repositories are read again, so that
// they see it.
func (r *Repo) flushPack() (map[plumbing.Hash]bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pack == nil || len(r.pack.objs) == 0 {
		return nil, nil
	}
	from, to := objectsDir(r.repo.Storer), objectsDir(r.local.Storer)
	if from == "" || to == "" {
		return nil, errors.New("write the objects: a repository not on disk")
	}
	pack, idx, err := r.pack.write(from)
	if err != nil {
		return nil, fmt.Errorf("write the objects: %w", err)
	}
	for _, f := range []string{pack, idx} {
		if err := linkObject(f, filepath.Join(to, "pack", filepath.Base(f))); err != nil {
			return nil, fmt.Errorf("write the objects: %w", err)
		}
	}
	for _, s := range []storer.EncodedObjectStorer{r.repo.Storer, r.local.Storer} {
		if fs, ok := s.(*filesystem.Storage); ok {
			fs.Reindex()
		}
	}
	commits := r.pack.commits
	r.pack = nil
	return commits, nil
}

// baseTree reads tree h of the base, once for the run.
func (r *Repo) baseTree(h plumbing.Hash, dir string) (*baseTree, error) {
	if t, ok := r.trees[h]; ok {
		return t, nil
	}
	obj, err := r.repo.Storer.EncodedObject(plumbing.TreeObject, h)
	if err != nil {
		return nil, fmt.Errorf("read the tree of %s/: %w", dir, err)
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("read the tree of %s/: %w", dir, err)
	}
	defer rd.Close()
	raw, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("read the tree of %s/: %w", dir, err)
	}
	t, err := parseTree(h, raw)
	if err != nil {
		return nil, err
	}
	if r.trees == nil {
		r.trees = map[plumbing.Hash]*baseTree{}
	}
	r.trees[h] = t
	return t, nil
}
