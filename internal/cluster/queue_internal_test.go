package cluster

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestQueueOfNotANumber: a field that holds no number is an error naming
// it, which errors.As finds; KAI's CRD refuses such a queue, so only a
// server without the CRD's schema could serve one.
func TestQueueOfNotANumber(t *testing.T) {
	for _, tt := range []struct {
		name  string
		gpu   map[string]any
		error string
	}{
		{name: "quota", gpu: map[string]any{"quota": "4"}, error: "spec.resources.gpu.quota is string, not a number"},
		{name: "limit", gpu: map[string]any{"quota": int64(4), "limit": true}, error: "spec.resources.gpu.limit is bool, not a number"},
		{name: "overQuotaWeight", gpu: map[string]any{"overQuotaWeight": []any{}}, error: "spec.resources.gpu.overQuotaWeight is []interface {}, not a number"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"metadata": map[string]any{"name": "q"},
				"spec":     map[string]any{"resources": map[string]any{"gpu": tt.gpu}},
			}}
			_, err := queueOf(obj)
			require.EqualError(t, err, tt.error)
			var fe *FieldError
			require.True(t, errors.As(err, &fe))
			require.Equal(t, "q", fe.Queue)
			require.ErrorIs(t, err, errNotNumber)
		})
	}
	// A gpu that is no map: the fields are not there.
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"resources": map[string]any{"gpu": "all"}}}}
	q, err := queueOf(obj)
	require.NoError(t, err)
	require.Equal(t, Resource{}, q.GPU)
}
