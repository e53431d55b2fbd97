package patcher

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// maxFileSize bounds what Discover reads; manifests are far smaller.
const maxFileSize = 8 << 20

// Discover walks root (a repository checkout), reads every *.yaml and *.yml
// file and returns the workloads it finds. Directories whose names start
// with a dot (.git, .github, ...) are skipped. A symlink is followed only
// when it stays inside root; one that leads outside is recorded as a
// problem, and a link to a file that is also found directly is read once.
// Files that cannot be read or parsed are recorded as problems, not
// errors: the error is only for a root that cannot be read or a cancelled
// ctx.
func Discover(ctx context.Context, root string) (*Inventory, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open checkout: %w", err)
	}
	defer r.Close()
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("open checkout: %w", err)
	}
	realRoot, err = filepath.Abs(realRoot)
	if err != nil {
		return nil, fmt.Errorf("open checkout: %w", err)
	}

	inv := &Inventory{}
	problem := func(rel string, line int, err error) {
		inv.Problems = append(inv.Problems, Problem{File: rel, Line: line, Err: err})
	}
	seen := map[string]bool{}
	var files []string
	err = filepath.WalkDir(realRoot, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		rel, rerr := filepath.Rel(realRoot, p)
		if rerr != nil {
			return rerr
		}
		rel = filepath.ToSlash(rel)
		if err != nil {
			problem(rel, 0, err)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if rel != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			if d.Name() == "templates" && isFile(filepath.Join(filepath.Dir(p), "Chart.yaml")) {
				// A Helm chart's templates are not YAML until rendered;
				// its values are edited elsewhere, or not at all.
				return fs.SkipDir
			}
			return nil
		}
		if !isYAMLName(d.Name()) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				problem(rel, 0, err)
				return nil
			}
			if target, err = filepath.Abs(target); err != nil {
				problem(rel, 0, err)
				return nil
			}
			trel, err := filepath.Rel(realRoot, target)
			if err != nil || trel == ".." || strings.HasPrefix(trel, ".."+string(filepath.Separator)) || filepath.IsAbs(trel) {
				problem(rel, 0, ErrOutsideRoot)
				return nil
			}
			if fi, err := os.Stat(target); err != nil || !fi.Mode().IsRegular() {
				return nil // links to directories are not followed
			}
			rel = filepath.ToSlash(trel)
		} else if !d.Type().IsRegular() {
			return nil
		}
		if !seen[rel] {
			seen[rel] = true
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk checkout: %w", err)
	}
	sort.Strings(files)

	for _, rel := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err := readFile(r, rel)
		if err != nil {
			problem(rel, 0, err)
			continue
		}
		ws, probs := discoverFile(rel, b)
		inv.Workloads = append(inv.Workloads, ws...)
		inv.Problems = append(inv.Problems, probs...)
	}
	sort.SliceStable(inv.Problems, func(i, j int) bool {
		if inv.Problems[i].File != inv.Problems[j].File {
			return inv.Problems[i].File < inv.Problems[j].File
		}
		return inv.Problems[i].Line < inv.Problems[j].Line
	})
	return inv, nil
}

func isYAMLName(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

// readFile reads rel through r, which refuses any path or symlink that
// leaves the root.
func readFile(r *os.Root, rel string) ([]byte, error) {
	fi, err := r.Stat(filepath.FromSlash(rel))
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	if fi.Size() > maxFileSize {
		return nil, fmt.Errorf("file larger than %d bytes", maxFileSize)
	}
	return r.ReadFile(filepath.FromSlash(rel))
}

// discoverFile returns the workloads of one file, in document order.
func discoverFile(rel string, b []byte) ([]Workload, []Problem) {
	s, err := parseStream(b)
	if err != nil {
		return nil, []Problem{{File: rel, Line: errLine(err), Err: err}}
	}
	var ws []Workload
	var probs []Problem
	for _, doc := range s.docs {
		if len(doc.Content) == 0 {
			continue
		}
		ref, spec, ok := identify(doc.Content[0])
		if !ok {
			continue
		}
		if ref.Name == "" {
			probs = append(probs, Problem{File: rel, Line: doc.Line, Err: fmt.Errorf("%s without metadata.name", ref.Kind)})
			continue
		}
		if err := validRef(ref); err != nil {
			probs = append(probs, Problem{File: rel, Line: doc.Line, Err: err})
			continue
		}
		w := readWorkload(doc.Content[0], ref, spec)
		w.File, w.Line = rel, doc.Line
		ws = append(ws, w)
	}
	return ws, probs
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}
