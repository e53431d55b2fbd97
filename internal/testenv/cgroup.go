package testenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// MemoryCgroup is a memory cgroup of a test's own, with a limit: what a
// container's memory limit is to a job. Processes started by Command run
// in it, and the kernel's OOM killer acts on them when together they pass
// the limit, as it would in the container.
type MemoryCgroup struct {
	dir string
	v2  bool
}

// NewMemoryCgroup makes a memory cgroup of limit bytes below the test's
// own cgroup, and removes it when the test ends. Under cgroup v2 it is an
// OOM group (memory.oom.group), so that one OOM kills every process in it,
// as Kubernetes 1.28 and later have it for a container; under v1 the
// kernel kills one process, and OOMKills counts it. The test is skipped
// where the machine allows none (not root, no writable memory
// controller), whatever StrictEnv says: no test dependency can provide
// one.
func NewMemoryCgroup(t testing.TB, limit int64) *MemoryCgroup {
	t.Helper()
	g, err := newMemoryCgroup(limit)
	if err != nil {
		t.Skipf("no memory cgroup of our own on this machine, skipping: %v (the test needs root and a writable memory controller, cgroup v1 or v2)", err)
		return nil
	}
	t.Cleanup(func() {
		// The group empties when its processes are reaped; rmdir fails
		// while one lingers.
		for range 50 {
			if err := os.Remove(g.dir); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("memory cgroup %s left behind", g.dir)
	})
	return g
}

func newMemoryCgroup(limit int64) (*MemoryCgroup, error) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("recommender-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	var v1, v2 string
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case listed(parts[1], "memory"):
			v1 = parts[2]
		}
	}
	if v2 != "" {
		if g, err := makeV2(filepath.Join("/sys/fs/cgroup", v2), name, limit); err == nil {
			return g, nil
		} else if v1 == "" {
			return nil, err
		}
	}
	if v1 == "" {
		return nil, errors.New("no memory controller in /proc/self/cgroup")
	}
	return makeV1(filepath.Join("/sys/fs/cgroup/memory", v1), name, limit)
}

// listed reports whether want is one of the comma-separated list.
func listed(list, want string) bool {
	return slices.Contains(strings.Split(list, ","), want)
}

func makeV2(parent, name string, limit int64) (*MemoryCgroup, error) {
	ctrl, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if err != nil {
		return nil, err
	}
	if !listed(strings.Join(strings.Fields(string(ctrl)), ","), "memory") {
		return nil, fmt.Errorf("cgroup v2: %s does not hand the memory controller to its children", parent)
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	g := &MemoryCgroup{dir: dir, v2: true}
	for file, v := range map[string]string{"memory.max": strconv.FormatInt(limit, 10), "memory.swap.max": "0", "memory.oom.group": "1"} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0); err != nil && file == "memory.max" {
			os.Remove(dir)
			return nil, err
		}
	}
	return g, nil
}

func makeV1(parent, name string, limit int64) (*MemoryCgroup, error) {
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
		os.Remove(dir)
		return nil, err
	}
	// No swap to spill into, as a container has none: where swap
	// accounting is on, the limit covers swap too.
	_ = os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0)
	return &MemoryCgroup{dir: dir}, nil
}

// Command is exec.Command for a process that starts inside the group: a
// shell moves itself in, then runs name in its place.
func (g *MemoryCgroup) Command(name string, args ...string) *exec.Cmd {
	script := `echo $$ > "$0" && exec "$@"`
	return exec.Command("/bin/sh", append([]string{"-c", script, filepath.Join(g.dir, "cgroup.procs"), name}, args...)...)
}

// OOMKills is how many processes the kernel's OOM killer killed in the
// group.
func (g *MemoryCgroup) OOMKills() int {
	file, key := "memory.oom_control", "oom_kill"
	if g.v2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(g.dir, file))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+" "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return -1
}

// Peak is the most memory the group held, as the kernel charged it (its
// processes' own and the page cache they filled); 0 where the kernel does
// not say.
func (g *MemoryCgroup) Peak() int64 {
	file := "memory.max_usage_in_bytes"
	if g.v2 {
		file = "memory.peak"
	}
	b, err := os.ReadFile(filepath.Join(g.dir, file))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}
