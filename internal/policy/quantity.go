package policy

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"go.yaml.in/yaml/v3"
)

// Duration is a policy duration: Go's syntax (30s, 10m, 1h30m) plus days
// and weeks (7d, 1w), which history windows need. It must be positive.
type Duration struct {
	time.Duration
}

func (d *Duration) decodeScalar(n *yaml.Node) error {
	if n.ShortTag() != "!!str" {
		return fmt.Errorf("expected a duration such as 30s, 10m, 2h or 7d, got %s", DescribeNode(n))
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// maxDuration bounds policy durations well below where time.Duration
// overflows (292 years).
const maxDuration = 10 * 365 * 24 * time.Hour

// ParseDuration parses a positive duration in Go's syntax, where d (24h)
// and w (7d) are units too.
func ParseDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("invalid duration %q: use a number and a unit, e.g. 30s, 10m, 2h or 7d", s)
	if s == "" {
		return 0, bad
	}
	var total time.Duration
	rest := s
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		j := i
		for j < len(rest) && !(rest[j] >= '0' && rest[j] <= '9' || rest[j] == '.') {
			j++
		}
		num, unit := rest[:i], rest[i:j]
		rest = rest[j:]
		if num == "" || unit == "" {
			return 0, bad
		}
		var part time.Duration
		switch unit {
		case "d", "w":
			n, err := strconv.ParseUint(num, 10, 16)
			if err != nil {
				return 0, bad
			}
			part = time.Duration(n) * 24 * time.Hour
			if unit == "w" {
				part *= 7
			}
		default:
			p, err := time.ParseDuration(num + unit)
			if err != nil {
				return 0, bad
			}
			part = p
		}
		total += part
		if part > maxDuration || total > maxDuration {
			return 0, fmt.Errorf("invalid duration %q: longer than %s", s, FormatDuration(maxDuration))
		}
	}
	if total <= 0 {
		return 0, fmt.Errorf("invalid duration %q: must be more than zero", s)
	}
	return total, nil
}

// String renders the duration compactly, the way policies write it (2m,
// 10m, 7d), for reasons shown to reviewers.
func (d Duration) String() string { return FormatDuration(d.Duration) }

// FormatDuration renders d as policies write durations: 2m, 1h30m, 7d.
func FormatDuration(d time.Duration) string { return engine.FormatDuration(d) }

// Quantity is an amount of GPUs: "1", 0.5, "500m" (Kubernetes' milli
// suffix). It must be positive.
type Quantity struct {
	Value float64
}

func (q *Quantity) decodeScalar(n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!str", "!!int", "!!float":
	default:
		return fmt.Errorf("expected an amount of GPUs such as \"1\" or \"0.5\", got %s", DescribeNode(n))
	}
	v, err := parseQuantity(n.Value)
	if err != nil {
		return err
	}
	q.Value = v
	return nil
}

func parseQuantity(s string) (float64, error) {
	num, milli := strings.CutSuffix(s, "m")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("invalid amount of GPUs %q: use a number such as \"1\" or \"0.5\"", s)
	}
	if milli {
		v /= 1000
	}
	if v <= 0 {
		return 0, errors.New("amount of GPUs must be more than zero")
	}
	return v, nil
}
