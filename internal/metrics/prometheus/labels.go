package prometheus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// MetricNames returns which of names have series in (at−lookback, at],
// within the source's label matcher: one request for the values of
// __name__, which the server answers from its index without reading a
// sample.
func (p *Source) MetricNames(ctx context.Context, names []string, at time.Time, lookback time.Duration) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	slices.Sort(quoted)
	ms := []string{"__name__=~" + quote(strings.Join(slices.Compact(quoted), "|"))}
	if p.matcher != nil {
		ms = append(ms, p.matcher.String())
	}
	got, err := p.LabelValues(ctx, "__name__", "{"+strings.Join(ms, ", ")+"}", at, lookback)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(got, func(n string) bool { return !slices.Contains(names, n) }), nil
}

// LabelValues returns the values label takes on the series that match
// selector in (at−lookback, at], sorted: one request to the label values
// API, retried as a query is.
func (p *Source) LabelValues(ctx context.Context, label, selector string, at time.Time, lookback time.Duration) ([]string, error) {
	if !labelNameRE.MatchString(label) {
		return nil, fmt.Errorf("label values: %q is not a label name", label)
	}
	args := url.Values{}
	args.Set("match[]", selector)
	args.Set("start", seconds(at.Add(-lookback)))
	args.Set("end", seconds(at))
	endpoint := strings.TrimSuffix(p.endpoint, "/query") + "/label/" + label + "/values?" + args.Encode()
	backoff := firstBackoff
	for n := 1; ; n++ {
		note := &responseNote{}
		values, err := p.labelValues(context.WithValue(ctx, noteKey{}, note), endpoint)
		if err == nil {
			return values, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		f := p.classify(err, note)
		switch {
		case f.tooLong != nil:
			return nil, fmt.Errorf("label values of %s from %s: %w", label, p.name, f.tooLong)
		case !f.retry && f.kind != nil:
			return nil, fmt.Errorf("label values of %s from %s: %w: %s", label, p.name, f.kind, f.msg)
		case !f.retry || n == maxTries:
			return nil, fmt.Errorf("label values of %s from %s: %w: %s (%d tries)", label, p.name, ErrUnavailable, f.msg, n)
		}
		wait := max(backoff, f.wait)
		backoff *= 2
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

// labelValues sends one request for label values and reads its answer as
// readAnswer reads a query's.
func (p *Source) labelValues(ctx context.Context, endpoint string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := statusError(resp.StatusCode); err != nil {
		return nil, err
	}
	var a struct {
		Status    string   `json:"status"`
		Data      []string `json:"data"`
		ErrorType string   `json:"errorType"`
		Error     string   `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		if errors.Is(err, errBodyTooLong) {
			return nil, err
		}
		return nil, &v1.Error{Type: v1.ErrBadResponse, Msg: "label values: " + err.Error()}
	}
	switch {
	case a.Status == "error":
		return nil, &v1.Error{Type: v1.ErrorType(a.ErrorType), Msg: a.Error}
	case apiCode(resp.StatusCode) || a.Status != "success":
		return nil, &v1.Error{Type: v1.ErrBadResponse, Msg: "inconsistent body for response code"}
	}
	slices.Sort(a.Data)
	return slices.Compact(a.Data), nil
}

// seconds writes a time as the API reads one: Unix seconds.
func seconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.Unix())+float64(t.Nanosecond())/1e9, 'f', -1, 64)
}
