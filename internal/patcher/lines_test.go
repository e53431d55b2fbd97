package patcher_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
)

var (
	// What a changed line may lose: one old value (usually a number, maybe
	// quoted; a quoted template may hold blanks), never a comment.
	oldMiddleRE = regexp.MustCompile(`^["']?[^#"']*["']?$`)
	// What a changed line may gain: a new number, maybe quoted, maybe as a
	// new flow entry or a flag added to a shell string.
	// (A flag inserted before another one shifts the common prefix, hence
	// the dashes on both sides.)
	newMiddleRE = regexp.MustCompile(`^[ ,{-]*((metadata|extraPodMetadata|annotations): {)*(gpu-fraction: )?["']?(-*gpu-memory-utilization=)?[0-9.]*["']?[ ,}-]*$`)
	// Lines an edit may insert without a value: created parent keys.
	createdKeyRE = regexp.MustCompile(`^\s*(metadata|extraPodMetadata|annotations):\s*$`)
	// With removedGPU: lines RemoveWholeGPUs may delete, and what it may
	// take out of a line (a flow entry).
	// A Dynamo service's count is its resources' gpu.
	gpuLineRE  = regexp.MustCompile(`^\s*(-\s+)?(["']?(nvidia\.com/)?gpu["']?\s*:.*|(resources|limits|requests)\s*:.*)$`)
	gpuEntryRE = regexp.MustCompile(`^[ ,]*["']?(nvidia\.com/)?gpu["']?\s*:\s*[^,{}\s#]+[ ,]*$`)
)

// removedGPU, among the values of onlyIntendedLines, allows what
// RemoveWholeGPUs does: deleted nvidia.com/gpu lines (and the emptied
// resources/limits/requests above them), flow entries taken out.
const removedGPU = "\x00removed nvidia.com/gpu"

// containerNameKey is how RemoveWholeGPUs names the container that held the
// GPU, when it was not the first.
const containerNameKey = "gpu-fraction-container-name: "

// splitLines splits on LF and drops a CR before it, so that line endings
// are compared separately.
func splitLines(b []byte) []string {
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// onlyIntendedLines checks the line-level diff of old and new: a changed
// line may differ only by a number that became one of values (possibly
// quoted, possibly as an added flow entry or flag), an inserted line must
// carry one of values or be a created metadata:/annotations: key, and no
// line may disappear. Line endings and the final-newline state must be
// kept.
func onlyIntendedLines(old, new []byte, values ...string) error {
	if len(old) > 0 && bytes.HasSuffix(old, []byte("\n")) != bytes.HasSuffix(new, []byte("\n")) {
		return fmt.Errorf("final newline state changed")
	}
	if bytes.Count(old, []byte("\r\n")) > 0 && bytes.Count(new, []byte("\n")) != bytes.Count(new, []byte("\r\n")) && bytes.Count(old, []byte("\n")) == bytes.Count(old, []byte("\r\n")) {
		return fmt.Errorf("a CRLF file gained LF-only lines")
	}
	a, b := splitLines(old), splitLines(new)
	gpu := false
	for _, v := range values {
		gpu = gpu || v == removedGPU
	}
	hasValue := func(l string) bool {
		for _, v := range values {
			if strings.Contains(l, v) {
				return true
			}
		}
		return false
	}
	inserted := func(l string) bool { return hasValue(l) || createdKeyRE.MatchString(l) }
	changed := func(o, n string) bool {
		if n == o+"," || (strings.HasSuffix(o, "}") || strings.HasSuffix(o, "]")) && n == strings.TrimRight(o[:len(o)-1], " \t")+"," {
			return true // a flow entry was appended after this line's one (the bracket moves down)
		}
		if len(n) == len(o)+1 {
			for i := 0; i < len(n); i++ {
				if n[i] == ',' && n[:i]+n[i+1:] == o {
					return true // a comma before a flow entry appended on the next line
				}
			}
		}
		if gpu {
			if len(o) == len(n)+1 {
				for i := 0; i < len(o); i++ {
					if o[i] == ',' && o[:i]+o[i+1:] == n {
						return true // the comma of a deleted flow entry
					}
				}
			}
			if k, _, ok := strings.Cut(o, containerNameKey); ok && strings.HasPrefix(n, k+containerNameKey) {
				return true // the fraction follows the GPU to another container
			}
			p, s := 0, 0
			for p < len(o) && p < len(n) && o[p] == n[p] {
				p++
			}
			for s < len(o)-p && s < len(n)-p && o[len(o)-1-s] == n[len(n)-1-s] {
				s++
			}
			if strings.Trim(n[p:len(n)-s], " ,") == "" && gpuEntryRE.MatchString(o[p:len(o)-s]) {
				return true
			}
		}
		if !hasValue(n) {
			return false
		}
		for _, v := range values {
			if ins := " --gpu-memory-utilization=" + v; strings.Contains(n, ins) && strings.Replace(n, ins, "", 1) == o {
				return true // the flag added to a shell string
			}
		}
		p := 0
		for p < len(o) && p < len(n) && o[p] == n[p] {
			p++
		}
		s := 0
		for s < len(o)-p && s < len(n)-p && o[len(o)-1-s] == n[len(n)-1-s] {
			s++
		}
		return oldMiddleRE.MatchString(o[p:len(o)-s]) && newMiddleRE.MatchString(n[p:len(n)-s])
	}
	m := difflib.NewMatcher(a, b)
	for _, op := range m.GetOpCodes() {
		switch op.Tag {
		case 'd':
			for i := op.I1; i < op.I2; i++ {
				if !gpu || !gpuLineRE.MatchString(a[i]) {
					return fmt.Errorf("line %d deleted: %q", i+1, a[i])
				}
			}
		case 'i':
			for j := op.J1; j < op.J2; j++ {
				if !inserted(b[j]) {
					return fmt.Errorf("unexpected inserted line %d: %q", j+1, b[j])
				}
			}
		case 'r':
			j := op.J1
			for i := op.I1; i < op.I2; i++ {
				if gpu && gpuLineRE.MatchString(a[i]) && (j >= op.J2 || !changed(a[i], b[j])) {
					continue // deleted
				}
				for j < op.J2 && !changed(a[i], b[j]) && inserted(b[j]) {
					j++
				}
				if j >= op.J2 || !changed(a[i], b[j]) {
					return fmt.Errorf("line %d changed beyond the intended value: %q", i+1, a[i])
				}
				j++
			}
			for ; j < op.J2; j++ {
				if !inserted(b[j]) {
					return fmt.Errorf("unexpected inserted line %d: %q", j+1, b[j])
				}
			}
		}
	}
	return nil
}

// splicesCoverDiff checks that the splices turn Old into New and that every
// line the line-level diff reports as changed is a line a splice touched.
func splicesCoverDiff(f patcher.File) error {
	var out []byte
	at := 0
	touched := map[int]bool{}
	lineOf := func(off int) int { return bytes.Count(f.Old[:off], []byte("\n")) }
	for _, s := range f.Splices {
		if s.Off < at || s.Off+s.Len > len(f.Old) {
			return fmt.Errorf("splices unsorted or out of range")
		}
		out = append(out, f.Old[at:s.Off]...)
		out = append(out, s.Text...)
		at = s.Off + s.Len
		for l := lineOf(s.Off); l <= lineOf(s.Off+s.Len); l++ {
			touched[l] = true
		}
	}
	out = append(out, f.Old[at:]...)
	if !bytes.Equal(out, f.New) {
		return fmt.Errorf("splices do not produce New")
	}
	a, b := splitLines(f.Old), splitLines(f.New)
	for _, op := range difflib.NewMatcher(a, b).GetOpCodes() {
		switch op.Tag {
		case 'e':
			continue
		case 'i':
			if !touched[op.I1] && !touched[op.I1-1] {
				return fmt.Errorf("lines inserted at line %d, away from every splice", op.I1+1)
			}
		default:
			for i := op.I1; i < op.I2; i++ {
				if !touched[i] {
					return fmt.Errorf("line %d changed but no splice touched it: %q", i+1, a[i])
				}
			}
		}
	}
	return nil
}
