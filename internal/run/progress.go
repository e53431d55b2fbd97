package run

import (
	"context"

	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// countPushes has Progress count the branches pushed through g; g as it
// is without one.
func (o *Options) countPushes(g publish.Git) publish.Git {
	if o.Progress == nil {
		return g
	}
	o.Progress.Start("publishing: branches pushed", 0)
	return countedGit{Git: g, o: o}
}

// clearProgress ends the progress line, when there is one.
func (o *Options) clearProgress() {
	if o.Progress != nil {
		o.Progress.Clear()
	}
}

type countedGit struct {
	publish.Git
	o *Options
}

var _ publish.Git = countedGit{}

// PushAll counts each branch of the push once it has gone through.
func (g countedGit) PushAll(ctx context.Context, updates []scm.Update) []error {
	errs := g.Git.PushAll(ctx, updates)
	for range updates {
		g.o.Progress.Step()
	}
	return errs
}
