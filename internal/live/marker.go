package live

import (
	"encoding/json"
	"fmt"
	"time"
)

// Marker is what MarkerAnnotation holds: enough to explain a live change
// to whoever finds it, and for a later run to let go of it or revert it.
type Marker struct {
	// Fraction is the gpu-fraction annotation of the pod template.
	Fraction Values `json:"gpuFraction"`
	// VLLM is the --gpu-memory-utilization of a vLLM container's args,
	// when the change set it; the tool then owns that container's whole
	// args list (SSA treats args as one atomic value).
	VLLM *VLLMValues `json:"vllm,omitempty"`
	At   time.Time   `json:"at"`
	// Reason is the decision's reason: the rule, the window, the numbers.
	Reason string `json:"reason"`
	// PullRequest is the pull request that brings Git to the new values:
	// its URL for people, its number and branch for the next run, which
	// asks the forge whether it merged.
	PullRequest string `json:"pullRequest"`
	Number      int    `json:"number"`
	Branch      string `json:"branch"`
	// Owners are the managers that had applied the fields before the
	// first live change took them (a GitOps controller); releasing hands
	// the fields back to them. Empty: nobody applied them, and the release
	// leaves them to HandoffManager.
	Owners []string `json:"owners,omitempty"`
}

// Values are a field's value in Git before the change (Old) and the one
// the tool applied (New).
type Values struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// VLLMValues are the vLLM flag's values in one container.
type VLLMValues struct {
	Container string `json:"container"`
	Values
}

func (m Marker) encode() (string, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("marker: %w", err)
	}
	return string(b), nil
}

// markerOf reads the marker of a Deployment's annotations; ok is false
// when there is none.
func markerOf(annotations map[string]string) (m Marker, ok bool, err error) {
	s, ok := annotations[MarkerAnnotation]
	if !ok {
		return Marker{}, false, nil
	}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return Marker{}, true, fmt.Errorf("annotation %s: %w", MarkerAnnotation, err)
	}
	if m.Fraction.New == "" || m.Branch == "" {
		return Marker{}, true, fmt.Errorf("annotation %s: no gpuFraction.new or branch", MarkerAnnotation)
	}
	return m, true, nil
}
