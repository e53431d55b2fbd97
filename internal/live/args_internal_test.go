package live

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWithFlag: the vLLM flag's value is found in every form the editor
// writes into a manifest, the last one wins (as in vLLM's parser), and
// replacing it changes those bytes only.
func TestWithFlag(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		value string // the current value; "" when not found
		want  []string
	}{
		{name: "flag=value", args: []string{"--model", "m", "--gpu-memory-utilization=0.27"}, value: "0.27",
			want: []string{"--model", "m", "--gpu-memory-utilization=0.40"}},
		{name: "flag value", args: []string{"--gpu-memory-utilization", "0.27", "--port", "8000"}, value: "0.27",
			want: []string{"--gpu-memory-utilization", "0.40", "--port", "8000"}},
		{name: "underscores", args: []string{"--gpu_memory_utilization=.5"}, value: ".5",
			want: []string{"--gpu_memory_utilization=0.40"}},
		{name: "the last of several", args: []string{"--gpu-memory-utilization=0.2", "--gpu-memory-utilization", "0.3"}, value: "0.3",
			want: []string{"--gpu-memory-utilization=0.2", "--gpu-memory-utilization", "0.40"}},
		{name: "in a shell string", args: []string{"-c", "exec vllm serve m --gpu-memory-utilization 0.27 --port 8000"}, value: "0.27",
			want: []string{"-c", "exec vllm serve m --gpu-memory-utilization 0.40 --port 8000"}},
		{name: "in a shell string, quoted", args: []string{"-c", "vllm serve m --gpu-memory-utilization='0.27'"}, value: "0.27",
			want: []string{"-c", "vllm serve m --gpu-memory-utilization='0.40'"}},
		{name: "absent", args: []string{"--model", "m"}},
		{name: "a variable, not a literal", args: []string{"--gpu-memory-utilization", "$(UTIL)"}},
		{name: "a longer flag", args: []string{"--gpu-memory-utilization-extra=0.3"}},
		{name: "no value", args: []string{"--gpu-memory-utilization"}},
		{name: "nil", args: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.value, flagValue(tt.args))
			got, ok := withFlag(tt.args, "0.40")
			require.Equal(t, tt.want != nil, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

// FuzzWithFlag: whatever the args, a replaced flag reads back as the new
// value, the list keeps its length, and only one item changes.
func FuzzWithFlag(f *testing.F) {
	f.Add("--gpu-memory-utilization", "0.27", "sh -c 'vllm serve --gpu_memory_utilization=0.3'")
	f.Add("--gpu-memory-utilization=0.5", "--port", "8000")
	f.Add("-c", "--gpu-memory-utilization\t.9;", "")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		args := []string{a, b, c}
		before := flagValue(args)
		got, ok := withFlag(args, "0.61")
		if !ok {
			if before != "" {
				t.Fatalf("%q: value %q found but not replaced", args, before)
			}
			return
		}
		if len(got) != len(args) {
			t.Fatalf("%q → %q: length changed", args, got)
		}
		changed := 0
		for i := range args {
			if got[i] != args[i] {
				changed++
			}
		}
		if changed > 1 {
			t.Fatalf("%q → %q: more than one item changed", args, got)
		}
		if v := flagValue(got); v != "0.61" {
			t.Fatalf("%q → %q: reads back %q", args, got, v)
		}
	})
}
