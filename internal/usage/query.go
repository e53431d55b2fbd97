package usage

import (
	"strings"
	"time"
)

// Mapping says where one metric lives in a time-series store and how its
// series are joined to pods and containers.
type Mapping struct {
	// Metric is the series name, e.g. kubex_gpu_container_sm_utilization_percent.
	Metric string
	// NamespaceLabel, PodLabel and ContainerLabel name the labels that carry
	// the namespace, pod and container of a series.
	NamespaceLabel string
	PodLabel       string
	ContainerLabel string
	// DeviceLabel, when set, names the label that tells a pod's GPUs
	// apart (Kubex's gpu_uuid, DCGM's UUID, HAMi's device_uuid). A pod's
	// series are then read per device: summed over its containers on
	// each device, and the busiest device decides. Devices are never
	// summed into "percent of one GPU".
	DeviceLabel string
	// Divisor, when set, makes the value a ratio in percent: 100 × Metric
	// ÷ the Divisor series, both summed over a pod's selected series first
	// (HAMi's used ÷ limit bytes). It names one metric, or several joined
	// by "+" whose sum divides (DCGM's FB_USED ÷ (FB_USED + FB_FREE)).
	Divisor string
	// Named marks a series a policy named itself: a metric preset maps
	// only the defaults of metrics no policy named, never this one, even
	// when it names the default series.
	Named bool
}

// Counter reports whether Metric is a counter, read as its rate per
// second between consecutive samples. OpenMetrics names every counter
// <name>_total, and only counters so (Kubex's open-source exporter:
// kubex_gpu_container_sm_utilization_percent_seconds_total).
func (m Mapping) Counter() bool { return strings.HasSuffix(m.Metric, "_total") }

// Divisors returns the metrics of m.Divisor.
func (m Mapping) Divisors() []string {
	if m.Divisor == "" {
		return nil
	}
	return strings.Split(m.Divisor, "+")
}

// Query asks a source for the usage of a batch of workloads that share one
// metric mapping (typically: every workload governed by one policy).
type Query struct {
	// At is the evaluation time: no sample after it may be returned.
	At time.Time
	// Lookback is how far before At samples are wanted: the window
	// (At-Lookback, At].
	Lookback time.Duration
	// Metrics maps each wanted metric to where it is stored.
	Metrics map[Metric]Mapping
	// Containers restricts the containers whose usage is summed per pod;
	// empty means all containers.
	Containers []string
	// Workloads are the workloads to answer for. Pods are attributed to
	// them through kube-state-metrics owner series, or else by the strict
	// pod-name pattern of their kind (Deployment, Rollout, StatefulSet,
	// LeaderWorkerSet); a pod whose workload cannot be told counts for
	// none, and a warning says so.
	Workloads []Ref
	// Components holds, for an InferenceService of Workloads whose
	// spec.predictor.name is set, that name: KServe names its predictor
	// <isvc>-<name>-predictor rather than <isvc>-predictor.
	Components map[Ref]string
	// ClusterLabel names the label of the store that tells its clusters
	// apart (e.g. cluster), when several write into one; "" reads the
	// store whole. With it, each workload is answered from the series
	// whose label is ClusterValues[workload's Ref.Cluster] alone, so that
	// pods of two clusters are never read as one workload's.
	ClusterLabel string
	// ClusterValues holds, by cluster name ("" for the one cluster of
	// a run without a map), the value of ClusterLabel its series carry.
	ClusterValues map[string]string
}

// ClusterValue is the value of q.ClusterLabel that the series of the
// workload ref carry, and false when q reads the store whole or names
// no value for ref's cluster.
func (q Query) ClusterValue(ref Ref) (string, bool) {
	if q.ClusterLabel == "" {
		return "", false
	}
	v, ok := q.ClusterValues[ref.Cluster]
	return v, ok
}

// Result is a source's answer to a Query.
type Result struct {
	// Workloads holds an entry for every queried workload that has at least
	// one pod with samples; a workload without any is absent.
	Workloads map[Ref]Workload
	// Warnings are things a reviewer should know about the data (a metric
	// missing from the store, labels found only as exported_*, a server's
	// own warnings).
	Warnings []string
	// Unattributed holds, for each queried workload concerned, the
	// warnings about pods that may be its own and count for no workload
	// (also in Warnings): the caller puts them in the workload's
	// Workload.Unattributed, which Workloads leaves empty, so that a
	// workload none of whose pods count is still told why.
	Unattributed map[Ref][]string
	// Failed holds the workloads the source could not answer for, each
	// with why (a cluster whose label value has no series): they get
	// no decision beyond "no change", as when the whole query fails.
	Failed map[Ref]string
}
