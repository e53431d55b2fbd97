package kustomize

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Builds are timed. kustomize takes no context and Go cannot stop a
// goroutine, so a build past its time is given up on: its error says so
// and the run goes on, while the build itself runs on in the background
// until it ends or the run does, holding a core and the memory its
// bounded input takes. While such a build runs, no other starts: builds
// given up on never pile up. All builds of a run share a budget, so that
// many slow roots cannot outlast the job either.

// errBuildStopped is a build given up on, or not started, at a time bound.
var errBuildStopped = errors.New("build stopped")

// buildClock times the builds of a run: discovery's, the proofs', and
// those after edits, which share it.
type buildClock struct {
	each, total time.Duration

	mu    sync.Mutex
	spent time.Duration
	// builds counts the builds started: what the proof saves is builds.
	builds int
	// stuck names the build given up on that still runs, "" for none.
	stuck string
}

func newBuildClock(lim buildLimits) *buildClock {
	return &buildClock{each: lim.Time, total: lim.Total}
}

// run builds dir as run does, within the clock's bounds.
func (c *buildClock) run(fs filesys.FileSystem, dir string, loose bool) (resmap.ResMap, error) {
	c.mu.Lock()
	left := c.total - c.spent
	switch {
	case left <= 0:
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: the run's %v of builds is spent", errBuildStopped, c.total)
	case c.stuck != "":
		stuck := c.stuck
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: the build of %s, past its time, is still running", errBuildStopped, stuck)
	}
	c.builds++
	limit, why := c.each, fmt.Sprintf("not done within %v", c.each)
	if left < limit {
		limit, why = left, fmt.Sprintf("the run's %v of builds was spent", c.total)
	}
	c.mu.Unlock()

	type result struct {
		rm  resmap.ResMap
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		rm, err := run(fs, dir, loose)
		done <- result{rm, err}
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case r := <-done:
		c.mu.Lock()
		c.spent += time.Since(start)
		c.mu.Unlock()
		return r.rm, r.err
	case <-timer.C:
		c.mu.Lock()
		c.spent += time.Since(start)
		c.stuck = dir
		c.mu.Unlock()
		go func() {
			<-done
			c.mu.Lock()
			c.stuck = ""
			c.mu.Unlock()
		}()
		return nil, fmt.Errorf("%w: %s", errBuildStopped, why)
	}
}
