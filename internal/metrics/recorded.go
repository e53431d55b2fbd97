package metrics

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Recorded is a usage source backed by a recorded OpenMetrics file: what a
// backtest replays, and what `promtool tsdb create-blocks-from openmetrics`
// loads into a Prometheus for the same data to be queried live.
//
// A Recorded is safe for concurrent use.
type Recorded struct {
	set            *seriesSet
	oldest, newest int64
}

var _ interface {
	Usage(context.Context, usage.Query) (usage.Result, error)
} = (*Recorded)(nil)

// OpenRecorded reads the recorded file at path, gunzipping it when the
// name ends in ".gz".
func OpenRecorded(path string) (*Recorded, error) {
	if !strings.HasSuffix(path, ".gz") {
		buf, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read recorded usage: %w", err)
		}
		return parseRecorded(buf, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read recorded usage: %w", err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("read recorded usage %s: %w", path, err)
	}
	buf, err := io.ReadAll(z)
	if err != nil {
		return nil, fmt.Errorf("read recorded usage %s: %w", path, err)
	}
	return parseRecorded(buf, path)
}

// ParseRecorded reads a recorded file from r; name stands for it in error
// messages and warnings.
func ParseRecorded(r io.Reader, name string) (*Recorded, error) {
	var buf bytes.Buffer
	// Recordings run to tens of megabytes: when the size is known, read
	// them into one allocation instead of a doubling series.
	if l, ok := r.(interface{ Len() int }); ok {
		buf.Grow(l.Len() + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, fmt.Errorf("read recorded usage %s: %w", name, err)
	}
	return parseRecorded(buf.Bytes(), name)
}

func parseRecorded(buf []byte, name string) (*Recorded, error) {
	p := newParser(name)
	if err := p.parse(buf); err != nil {
		return nil, err
	}
	r := &Recorded{set: newSeriesSet(name, p.series)}
	first := true
	for _, s := range r.set.series {
		if len(s.Samples) == 0 {
			continue
		}
		lo, hi := s.Samples[0].T, s.Samples[len(s.Samples)-1].T
		if first || lo < r.oldest {
			r.oldest = lo
		}
		if first || hi > r.newest {
			r.newest = hi
		}
		first = false
	}
	return r, nil
}

// Oldest returns the time of the oldest sample in the file, or the zero
// time when the file holds none.
func (r *Recorded) Oldest() time.Time {
	if len(r.set.series) == 0 {
		return time.Time{}
	}
	return time.UnixMilli(r.oldest).UTC()
}

// Newest returns the time of the newest sample in the file, the natural
// evaluation time of a recording, or the zero time when it holds none.
func (r *Recorded) Newest() time.Time {
	if len(r.set.series) == 0 {
		return time.Time{}
	}
	return time.UnixMilli(r.newest).UTC()
}

// Series returns every series of the file, sorted by metric name and then
// label set. The result is a copy.
func (r *Recorded) Series() []Series {
	out := make([]Series, len(r.set.series))
	for i, s := range r.set.series {
		out[i] = Series{Metric: s.Metric, Labels: slices.Clone(s.Labels), Samples: slices.Clone(s.Samples)}
	}
	slices.SortFunc(out, func(a, b Series) int {
		if c := strings.Compare(a.Metric, b.Metric); c != 0 {
			return c
		}
		return slices.CompareFunc(a.Labels, b.Labels, func(x, y Label) int {
			if c := strings.Compare(x.Name, y.Name); c != 0 {
				return c
			}
			return strings.Compare(x.Value, y.Value)
		})
	})
	return out
}

// Usage answers q from the recording. It never returns a sample after
// q.At, so that a backtest replaying the file sees only the past.
func (r *Recorded) Usage(ctx context.Context, q usage.Query) (usage.Result, error) {
	return r.set.answer(ctx, q)
}
