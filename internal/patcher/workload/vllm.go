package workload

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

var (
	// A whole argument: --gpu-memory-utilization or --gpu_memory_utilization,
	// optionally with =value.
	utilArgRE = regexp.MustCompile(`^--gpu[-_]memory[-_]utilization(=.*)?$`)
	// The flag anywhere in a shell string.
	utilFlagRE = regexp.MustCompile(`--gpu[-_]memory[-_]utilization`)
	kvBytesRE  = regexp.MustCompile(`(?:^|[\s"'])--kv[-_]cache[-_]memory[-_]bytes(?:$|[\s=])`)
	// Where a missing flag goes in a shell string: right after
	// `vllm serve <model>` or after the module vllm.entrypoints.….
	serveRE  = regexp.MustCompile(`(?:^|[\s/;&|("'])vllm[ \t]+serve(?:[ \t]+(?:"[^"\s]*"|'[^'\s]*'|[^\s\\;&|'"#-][^\s;&|'"]*))?|vllm\.entrypoints(?:\.[A-Za-z0-9_]+)+`)
	numberRE = regexp.MustCompile(`^[0-9]*\.?[0-9]+`)
	shellRE  = regexp.MustCompile(`^-[a-zA-Z]*c[a-zA-Z]*$`)
)

// utilHit is one --gpu-memory-utilization value inside a string: the
// number is s[start:end].
type utilHit struct {
	start, end int
	value      string
}

// utilHits finds every --gpu-memory-utilization value in a shell string or
// in its YAML source. A flag whose value is not a literal number is an
// error: it is a template or a variable, and is not ours to overwrite.
func utilHits(s string) ([]utilHit, error) {
	var hits []utilHit
	for _, m := range utilFlagRE.FindAllStringIndex(s, -1) {
		if m[0] > 0 && !strings.ContainsRune(" \t\r\n\"'=;&|(", rune(s[m[0]-1])) {
			continue
		}
		i := m[1]
		switch {
		case i < len(s) && s[i] == '=':
			i++
		case i < len(s) && strings.ContainsRune(" \t\r\n\\", rune(s[i])):
			for i < len(s) {
				if s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' {
					i++
				} else if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '\n' || s[i+1] == '\r') {
					i++
				} else {
					break
				}
			}
		case i == len(s) || s[i] == '"' || s[i] == '\'':
			return nil, fmt.Errorf("%w: --gpu-memory-utilization without a value", splice.ErrUnsupported)
		default:
			continue // a longer flag name
		}
		q := byte(0)
		if i < len(s) && (s[i] == '"' || s[i] == '\'') {
			q = s[i]
			i++
		}
		num := numberRE.FindString(s[i:])
		j := i + len(num)
		ok := num != ""
		if ok && q != 0 {
			ok = j < len(s) && s[j] == q
		} else if ok && j < len(s) {
			ok = strings.ContainsRune(" \t\r\n;&|)\"'\\", rune(s[j]))
		}
		if !ok {
			tok := s[i:]
			if k := strings.IndexAny(tok, " \t\r\n;"); k >= 0 {
				tok = tok[:k]
			}
			if strings.Contains(tok, "{{") {
				return nil, fmt.Errorf("%w: --gpu-memory-utilization %s", splice.ErrTemplate, tok)
			}
			return nil, fmt.Errorf("%w: --gpu-memory-utilization value %q is not a literal number", splice.ErrUnsupported, tok)
		}
		hits = append(hits, utilHit{start: i, end: j, value: num})
	}
	return hits, nil
}

// utilSite is where a container's --gpu-memory-utilization value lives.
type utilSite struct {
	n     *yaml.Node // a scalar in command or args
	whole bool       // n is the value argument itself; else the value is inside n's text
	value string
}

// vllmScan is what a container's image, command and args say about vLLM.
type vllmScan struct {
	command, args *yaml.Node   // sequences, nil when absent or not sequences
	items         []*yaml.Node // scalar items of command, then of args
	image         bool         // the image names vllm
	invoked       bool         // the command line runs vllm serve / vllm.entrypoints
	tokens        bool         // ... as separate arguments (not inside a shell string)
	shell         bool         // the command line runs a shell with -c
	kvBytes       bool
	sites         []utilSite
	scripts       []*yaml.Node // shell strings holding a vllm invocation
	err           error        // the flag is present in a form we must not edit
	// runtime: a serving container whose runtime serves with vLLM
	// (servesVLLM); its args go to the runtime's command line.
	runtime bool
}

func (v *vllmScan) isVLLM() bool { return v.image || v.invoked || v.runtime || len(v.sites) > 0 }

// scanContainer is scanVLLM of container r, which knows a serving
// container's runtime.
func scanContainer(r containerRef) *vllmScan {
	v := scanVLLM(r.c)
	v.runtime = servesVLLM(r)
	return v
}

// current is the value vLLM uses: its argument parser takes the last
// occurrence of a flag.
func (v *vllmScan) current() string {
	if len(v.sites) > 0 {
		return v.sites[len(v.sites)-1].value
	}
	return ""
}

// scanVLLM reads a container mapping node.
func scanVLLM(c *yaml.Node) *vllmScan {
	v := &vllmScan{}
	v.image = strings.Contains(strings.ToLower(splice.Str(c, "image")), "vllm")
	for _, name := range []string{"command", "args"} {
		_, s := splice.Field(c, name)
		if s == nil || s.Kind != yaml.SequenceNode {
			continue
		}
		if name == "command" {
			v.command = s
		} else {
			v.args = s
		}
		for _, it := range s.Content {
			if it.Kind == yaml.ScalarNode {
				v.items = append(v.items, it)
			}
		}
	}
	if len(v.items) > 0 && v.command != nil && len(v.command.Content) > 0 {
		switch path.Base(v.command.Content[0].Value) {
		case "sh", "bash", "dash", "ash", "zsh", "ksh":
			for _, it := range v.items[1:] {
				if shellRE.MatchString(it.Value) {
					v.shell = true
				}
			}
		}
	}
	for i, it := range v.items {
		val := strings.TrimSpace(it.Value)
		script := strings.ContainsAny(val, " \t\n")
		switch {
		case !script && (val == "vllm" || strings.HasSuffix(val, "/vllm")) && i+1 < len(v.items) && v.items[i+1].Value == "serve",
			!script && strings.HasPrefix(val, "vllm.entrypoints"):
			v.invoked, v.tokens = true, true
		case script && serveRE.MatchString(it.Value):
			v.invoked = true
			v.scripts = append(v.scripts, it)
		}
		// Every match holds "--kv": the regexp, which has no literal
		// prefix to skip ahead by, runs only on the few items that do.
		if strings.Contains(val, "--kv") && kvBytesRE.MatchString(val) {
			v.kvBytes = true
		}
		if m := utilArgRE.FindStringSubmatch(val); m != nil && !script {
			if m[1] == "" {
				if i+1 >= len(v.items) {
					v.err = fmt.Errorf("%w: --gpu-memory-utilization without a value", splice.ErrUnsupported)
					continue
				}
				next := v.items[i+1]
				v.sites = append(v.sites, utilSite{n: next, whole: true, value: next.Value})
				continue
			}
			hits, err := utilHits(val)
			if err != nil {
				v.err = err
				continue
			}
			for _, h := range hits {
				v.sites = append(v.sites, utilSite{n: it, value: h.value})
			}
			continue
		}
		if script {
			hits, err := utilHits(it.Value)
			if err != nil {
				v.err = err
				continue
			}
			for _, h := range hits {
				v.sites = append(v.sites, utilSite{n: it, value: h.value})
			}
		}
	}
	return v
}
