package live

import (
	"regexp"
	"slices"
	"strings"
)

// The vLLM flag as internal/patcher finds it in a manifest: a whole
// argument (--gpu-memory-utilization or --gpu_memory_utilization, with
// =value or followed by the value), or inside a shell string.
var (
	flagArgRE   = regexp.MustCompile(`^--gpu[-_]memory[-_]utilization(?:=([0-9]*\.?[0-9]+))?$`)
	flagShellRE = regexp.MustCompile(`(?:^|[\s"'=;&|(])--gpu[-_]memory[-_]utilization(?:=|[ \t]+)["']?([0-9]*\.?[0-9]+)`)
)

// flagSite is where the value vLLM uses sits in an args list: item i,
// bytes [start, end) of it. vLLM's parser takes the last occurrence.
type flagSite struct {
	i, start, end int
}

// findFlag finds the last --gpu-memory-utilization value in args; ok is
// false when args do not hold the flag with a literal number, in which
// case the live path leaves vLLM to the pull request.
func findFlag(args []string) (flagSite, bool) {
	var site flagSite
	found := false
	for i, a := range args {
		if m := flagArgRE.FindStringSubmatchIndex(a); m != nil {
			switch {
			case m[2] >= 0:
				site, found = flagSite{i, m[2], m[3]}, true
			case i+1 < len(args) && numberRE.MatchString(args[i+1]):
				site, found = flagSite{i + 1, 0, len(args[i+1])}, true
			}
			continue
		}
		if strings.ContainsAny(a, " \t\n") {
			for _, m := range flagShellRE.FindAllStringSubmatchIndex(a, -1) {
				site, found = flagSite{i, m[2], m[3]}, true
			}
		}
	}
	return site, found
}

var numberRE = regexp.MustCompile(`^[0-9]*\.?[0-9]+$`)

// flagValue is the --gpu-memory-utilization value vLLM uses, "" when args
// do not hold one.
func flagValue(args []string) string {
	s, ok := findFlag(args)
	if !ok {
		return ""
	}
	return args[s.i][s.start:s.end]
}

// withFlag is args with the flag's value replaced, and nothing else
// changed; ok is false when args do not hold the flag.
func withFlag(args []string, value string) ([]string, bool) {
	s, ok := findFlag(args)
	if !ok {
		return nil, false
	}
	out := slices.Clone(args)
	out[s.i] = out[s.i][:s.start] + value + out[s.i][s.end:]
	return out, true
}
