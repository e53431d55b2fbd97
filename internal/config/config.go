// Package config is the config file of run and plan and the RECOMMENDER_*
// environment: each key is a flag of a command, so that the flag stays the
// one definition of a setting, and the file and the environment only
// supply values that go through the flag's own parsing. A command's flags
// are filled in flag > environment > file > default.
// FlagError is a mistake in one of these settings, named by its flag.
package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/located"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// Key ties a key of the config file to the flag it sets: the flag
// stays the one definition of a setting (its type, default, parsing and
// checks), and the file and the environment only supply its value.
type Key struct {
	Path string // key path in the file, e.g. prometheus.tokenFile
	Flag string // e.g. prometheus-token-file
}

// keys are the settings a config file holds, in the order `config
// print` shows them; read through Keys, so that no caller can change them. Secrets are not among them: a file or an environment
// variable holds each, and the config names it. One file serves run and
// plan: each command takes the keys whose flags it has and leaves the
// others, so a key only run uses (pullRequests.maxNew) is no error for
// plan, while an unknown key is one for both.
var keys = []Key{
	{"scm", "scm"},
	{"repo", "repo"},
	{"base", "base"},
	{"git.url", "git-url"},
	{"git.sshKeyFile", "git-ssh-key-file"},
	{"git.knownHostsFile", "git-known-hosts-file"},
	{"caFile", "ca-file"},
	{"github.repo", "github-repo"},
	{"github.url", "github-url"},
	{"github.tokenFile", "github-token-file"},
	{"github.tokenEnv", "github-token-env"},
	{"github.appID", "github-app-id"},
	{"github.installationID", "github-installation-id"},
	{"github.appKeyFile", "github-app-key-file"},
	{"gitlab.url", "gitlab-url"},
	{"gitlab.project", "gitlab-project"},
	{"gitlab.tokenFile", "gitlab-token-file"},
	{"gitlab.tokenEnv", "gitlab-token-env"},
	{"policies", "policies"},
	{"defaultNamespace", "default-namespace"},
	{"filter.namespaces", "namespace"},
	{"filter.selector", "selector"},
	{"filter.workloads", "workload"},
	{"filter.clusters", "cluster"},
	{"metrics.file", "metrics-file"},
	{"metrics.preset", "metrics-preset"},
	{"metrics.at", "at"},
	{"metrics.clusterLabel", "cluster-label"},
	{"metrics.wholeStore", "whole-store"},
	{"prometheus.url", "prometheus-url"},
	{"prometheus.tokenFile", "prometheus-token-file"},
	{"prometheus.tokenEnv", "prometheus-token-env"},
	{"prometheus.user", "prometheus-user"},
	{"prometheus.passwordFile", "prometheus-password-file"},
	{"prometheus.headers", "prometheus-header"},
	{"prometheus.caFile", "prometheus-ca-file"},
	{"prometheus.certFile", "prometheus-cert-file"},
	{"prometheus.keyFile", "prometheus-key-file"},
	{"prometheus.insecureSkipVerify", "prometheus-insecure-skip-verify"},
	{"prometheus.timeout", "prometheus-timeout"},
	{"pullRequests.groupBy", "group-by"},
	{"pullRequests.branchPrefix", "branch-prefix"},
	{"pullRequests.labels", "label"},
	{"pullRequests.reviewers", "reviewer"},
	{"pullRequests.assignees", "assignee"},
	{"pullRequests.draft", "draft"},
	{"pullRequests.maxOpen", "max-open"},
	{"pullRequests.maxNew", "max-new"},
	{"pullRequests.declinePercent", "decline-percent"},
	{"pullRequests.fleetFindings", "fleet-findings"},
	{"dashboard.enabled", "dashboard"},
	{"commits.authorName", "author-name"},
	{"commits.authorEmail", "author-email"},
	{"commits.signingKeyFile", "signing-key-file"},
	{"live.enabled", "live"},
	{"live.namespaces", "live-namespaces"},
	{"live.maxChanges", "live-max-changes"},
	{"live.forceConflicts", "live-force-conflicts"},
	{"live.revertClosed", "live-revert-closed"},
	{"live.contexts", "live-context"},
	{"kubeconfig", "kubeconfig"},
	{"dryRun", "dry-run"},
	{"output", "output"},
	{"pushgateway.url", "pushgateway-url"},
	{"pushgateway.job", "pushgateway-job"},
	{"metricsTextfile", "metrics-textfile"},
	{"webhook.urlFile", "webhook-url-file"},
	{"webhook.urlEnv", "webhook-url-env"},
	{"eventCronJob", "event-cronjob"},
	{"detailedExitCode", "detailed-exit-code"},
	{"logLevel", "log-level"},
	{"logFormat", "log-format"},
}

// envPrefix starts the environment variable of every setting:
// RECOMMENDER_ and the flag's name in capitals, dashes as underscores.
const envPrefix = "RECOMMENDER_"

// maxConfigSize bounds the config file read; a real one is a few hundred
// bytes.
const maxConfigSize = 1 << 20

// Keys are the settings a config file holds, in the order `config print`
// shows them.
func Keys() []Key { return slices.Clone(keys) }

// EnvName is the environment variable that sets a flag.
func EnvName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Error is a bad config file or environment variable: a usage
// mistake (exit 2), told without the command's usage, which would bury it.
type Error struct{ errs []error }

// NewError is errs as a mistake in the config file or the environment.
func NewError(errs ...error) *Error { return &Error{errs} }

func (e *Error) Error() string   { return errors.Join(e.errs...).Error() }
func (e *Error) Unwrap() []error { return e.errs }

// File is a decoded config file: for each flag, the node that sets it.
type File struct {
	Name   string
	values map[string]*yaml.Node // by flag name
}

// Read reads and decodes a config file strictly: an unknown or
// duplicate key is an error that names the file, line, column and key
// path, every one of them at once. Apply finds the values of the wrong
// type and the bad values; Load tells both kinds together.
func Read(name string) (*File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, &Error{[]error{fmt.Errorf("config: %w", err)}}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, &Error{[]error{fmt.Errorf("config %w", &located.Error{File: name, Err: err})}}
	}
	if len(b) > maxConfigSize {
		return nil, &Error{[]error{fmt.Errorf("config %w", &located.Error{File: name, Err: fmt.Errorf("larger than %d bytes", maxConfigSize)})}}
	}
	return Decode(name, b)
}

// Decode decodes a config file's content as Read does. When only some
// keys are wrong (unknown, duplicate, not a mapping), the File holds the
// others along with the error; it is nil when the text is no YAML.
func Decode(name string, b []byte) (*File, error) {
	cfg := &File{Name: name, values: map[string]*yaml.Node{}}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return cfg, nil // an empty file sets nothing
		}
		return nil, &Error{[]error{&located.Error{File: name, Err: err}}}
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, &Error{[]error{&located.Error{File: name, Line: next.Line, Err: errors.New("one YAML document expected")}}}
	}
	if err := checkout.CheckAliases(&doc); err != nil {
		return nil, &Error{[]error{&located.Error{File: name, Err: err}}}
	}
	d := &configDecoder{file: name, cfg: cfg}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if !isNullNode(root) {
		d.mapping(root, "")
	}
	if len(d.errs) > 0 {
		// The keys that did decode are kept: Load tells what is wrong
		// with their values in the same breath.
		return cfg, &Error{d.errs}
	}
	return cfg, nil
}

type configDecoder struct {
	file string
	cfg  *File
	errs []error
}

func (d *configDecoder) errorf(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, &located.Error{File: d.file, Line: n.Line, Column: n.Column, Field: path, Err: fmt.Errorf(format, args...)})
}

// mapping decodes the keys under prefix ("" for the top level).
func (d *configDecoder) mapping(n *yaml.Node, prefix string) {
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode {
		d.errorf(n, prefix, "expected a mapping, got %s", policy.DescribeNode(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolveAlias(n.Content[i+1])
		path := k.Value
		if prefix != "" {
			path = prefix + "." + k.Value
		}
		if seen[k.Value] {
			d.errorf(k, path, "duplicate key")
			continue
		}
		seen[k.Value] = true
		if key, ok := keyAt(path); ok {
			if !isNullNode(v) {
				d.cfg.values[key.Flag] = v
			}
			continue
		}
		if isSection(path) {
			if !isNullNode(v) {
				d.mapping(v, path)
			}
			continue
		}
		d.errorf(k, path, "unknown key%s", suggestKey(prefix, k.Value))
	}
}

func keyAt(path string) (Key, bool) {
	for _, k := range keys {
		if k.Path == path {
			return k, true
		}
	}
	return Key{}, false
}

func isSection(path string) bool {
	for _, k := range keys {
		if strings.HasPrefix(k.Path, path+".") {
			return true
		}
	}
	return false
}

// siblings are the keys that may stand beside others under prefix.
func siblings(prefix string) []string {
	var names []string
	for _, k := range keys {
		rest, ok := k.Path, prefix == ""
		if !ok {
			rest, ok = strings.CutPrefix(k.Path, prefix+".")
		}
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, ".")
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// elsewhere is the one key of the file named name in another section
// (groupBy written at the top for pullRequests.groupBy); none when two
// sections have it (url).
func elsewhere(name string) (string, bool) {
	var found []string
	for _, k := range keys {
		if i := strings.LastIndexByte(k.Path, '.'); i >= 0 && strings.EqualFold(k.Path[i+1:], name) {
			found = append(found, k.Path)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return "", false
}

// secretKeyRE matches a key that looks like it holds a secret's value.
var secretKeyRE = regexp.MustCompile(`(?i)(token|password|secret|key)$`)

// suggestKey helps with an unknown key: the known one closest to it
// (located.Nearest), or the same key in another section, or where a
// secret belongs, or the keys known there.
func suggestKey(prefix, name string) string {
	known := siblings(prefix)
	if near, ok := located.Nearest(name, known); ok {
		return fmt.Sprintf(" (did you mean %q?)", near)
	}
	if path, ok := elsewhere(name); ok {
		return fmt.Sprintf(" (did you mean %q?)", path)
	}
	if secretKeyRE.MatchString(name) {
		return " (a config holds no secret: name the file or the environment variable that holds it, e.g. tokenFile or tokenEnv)"
	}
	return " (known keys: " + strings.Join(known, ", ") + ")"
}

// Source says where a setting's value came from.
type Source struct {
	Kind string // "flag", "env", "file" or "default"
	// Where: the variable's name, or file:line:column.
	Where string
}

func (s Source) String() string {
	switch s.Kind {
	case "env":
		return "$" + s.Where
	case "file":
		return s.Where
	}
	return s.Kind
}

// Effective is a command's flags once the environment and the config
// file have filled in what the command line left out.
type Effective struct {
	Flags   *pflag.FlagSet
	Sources map[string]Source // by flag name
	File    string
}

// AddFlag registers `--config` on the flags of a command that reads a
// config file.
func AddFlag(fs *pflag.FlagSet, file *string) {
	fs.StringVar(file, "config", "", "read settings from this YAML `file` (or $RECOMMENDER_CONFIG); flags and RECOMMENDER_* variables win over it")
}

// Load reads the config file that `--config` or $RECOMMENDER_CONFIG
// names, if any, and fills the flags in fs that the command line left
// unset from the environment, then from the file.
func Load(fs *pflag.FlagSet, file *string, lookupEnv func(string) (string, bool)) (*Effective, error) {
	if !fs.Changed("config") {
		*file, _ = lookupEnv(EnvName("config"))
	}
	var cfg *File
	var readErr error
	if *file != "" {
		if cfg, readErr = Read(*file); cfg == nil {
			return nil, readErr
		}
	}
	eff, err := Apply(fs, cfg, lookupEnv)
	if readErr == nil {
		return eff, err
	}
	// Every mistake of the file at once, in the order of the file: an
	// unknown key does not hide a bad value on the next line.
	var errs []error
	for _, e := range []error{readErr, err} {
		var ce *Error
		if errors.As(e, &ce) {
			errs = append(errs, ce.errs...)
		}
	}
	return nil, &Error{sortByPlace(errs)}
}

// sortByPlace puts the config file's errors in the order of the file,
// after those of the environment, which have no line.
func sortByPlace(errs []error) []error {
	place := func(e error) (int, int) {
		var le *located.Error
		if errors.As(e, &le) {
			return le.Line, le.Column
		}
		return 0, 0
	}
	slices.SortStableFunc(errs, func(a, b error) int {
		la, ca := place(a)
		lb, cb := place(b)
		return cmp.Or(cmp.Compare(la, lb), cmp.Compare(ca, cb))
	})
	return errs
}

// Apply fills the flags that the command line did not set from the
// environment, then from the config file (nil: none): flag > env > file >
// default. Values from either go through the flag's own parsing, so a
// setting means the same wherever it is written.
func Apply(fs *pflag.FlagSet, cfg *File, lookupEnv func(string) (string, bool)) (*Effective, error) {
	eff := &Effective{Flags: fs, Sources: map[string]Source{}}
	if cfg != nil {
		eff.File = cfg.Name
	}
	var errs []error
	for _, key := range keys {
		fl := fs.Lookup(key.Flag)
		if fl == nil {
			continue
		}
		if fl.Changed {
			eff.Sources[key.Flag] = Source{Kind: "flag"}
			continue
		}
		// A variable that is set wins even when empty: it empties a
		// string or a list the file sets, as unsetting it brings the
		// file's value back.
		if v, ok := lookupEnv(EnvName(key.Flag)); ok {
			eff.Sources[key.Flag] = Source{Kind: "env", Where: EnvName(key.Flag)}
			if err := setFromEnv(fs, fl, v); err != nil {
				errs = append(errs, fmt.Errorf("$%s: %w", EnvName(key.Flag), err))
			}
			continue
		}
		if cfg != nil {
			if n, ok := cfg.values[key.Flag]; ok {
				eff.Sources[key.Flag] = Source{Kind: "file", Where: fmt.Sprintf("%s:%d:%d", cfg.Name, n.Line, n.Column)}
				if err := setFromNode(fs, fl, n); err != nil {
					errs = append(errs, &located.Error{File: cfg.Name, Line: n.Line, Column: n.Column, Field: key.Path, Err: err})
				}
				continue
			}
		}
		eff.Sources[key.Flag] = Source{Kind: "default"}
	}
	if len(errs) > 0 {
		return nil, &Error{sortByPlace(errs)}
	}
	return eff, nil
}

// setFromEnv sets a flag from an environment variable. A list is split
// by splitEnvList. An empty value is the empty string or the empty list;
// a boolean, a number or a duration has no empty value, so an empty one
// is an error rather than a silent false or 0.
func setFromEnv(fs *pflag.FlagSet, fl *pflag.Flag, v string) error {
	typ := fl.Value.Type()
	if typ == "stringArray" {
		for _, item := range splitEnvList(v) {
			if err := fs.Set(fl.Name, item); err != nil {
				return err
			}
		}
		return nil
	}
	if v == "" && typ != "string" {
		return fmt.Errorf("expected %s, got an empty value (unset the variable to use the config file's value or the default)", typeName(typ))
	}
	if err := checkScalar(typ, v); err != nil {
		return err
	}
	return setScalar(fs, fl, v)
}

// splitEnvList splits a list variable on commas. A comma inside an item
// is written `\,` (a header's value, a selector) and a backslash `\\`;
// any other backslash stands for itself. Space around each item is
// trimmed and empty items are dropped, so "a, b," is [a b].
func splitEnvList(v string) []string {
	var items []string
	var cur strings.Builder
	flush := func() {
		if item := strings.TrimSpace(cur.String()); item != "" {
			items = append(items, item)
		}
		cur.Reset()
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\' && i+1 < len(v) && (v[i+1] == ',' || v[i+1] == '\\'):
			cur.WriteByte(v[i+1])
			i++
		case c == ',':
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return items
}

// setFromNode sets a flag from a config file's node, insisting on the YAML
// type the flag holds: a quoted "true" is not a boolean, and an unquoted
// number is not a branch name.
func setFromNode(fs *pflag.FlagSet, fl *pflag.Flag, n *yaml.Node) error {
	typ := fl.Value.Type()
	if typ == "stringArray" {
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("expected a list of strings, got %s", policy.DescribeNode(n))
		}
		for i, item := range n.Content {
			item = resolveAlias(item)
			if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!str" {
				return fmt.Errorf("item %d: expected a string, got %s", i, policy.DescribeNode(item))
			}
			if err := fs.Set(fl.Name, item.Value); err != nil {
				return err
			}
		}
		return nil
	}
	want := map[string]string{"bool": "!!bool", "int": "!!int", "int64": "!!int"}[typ]
	if want == "" {
		want = "!!str"
	}
	tag := n.ShortTag()
	if want == "!!str" && tag == "!!timestamp" {
		tag = want // an evaluation time, written unquoted
	}
	if n.Kind != yaml.ScalarNode || tag != want {
		hint := ""
		if want == "!!str" && n.Kind == yaml.ScalarNode {
			hint = " (quote it)"
		}
		return fmt.Errorf("expected %s, got %s%s", typeName(typ), policy.DescribeNode(n), hint)
	}
	v := n.Value
	if typ == "bool" {
		v = strings.ToLower(v)
	}
	if err := checkScalar(typ, v); err != nil {
		return err
	}
	return setScalar(fs, fl, v)
}

// setScalar sets a flag unless the value is its default: a config that
// spells out every default (as `config print` writes one) then means what
// one that leaves them out means, and a check such as "needs
// `--prometheus-url`" does not fire on a Prometheus setting left at its
// default.
func setScalar(fs *pflag.FlagSet, fl *pflag.Flag, v string) error {
	if v == fl.DefValue {
		return nil
	}
	if d, err := time.ParseDuration(v); err == nil && fl.Value.Type() == "duration" && d.String() == fl.DefValue {
		return nil
	}
	return fs.Set(fl.Name, v)
}

// checkScalar parses a value as the flag will, to say what is wrong with
// it in words rather than in pflag's.
func checkScalar(typ, v string) error {
	var err error
	switch typ {
	case "bool":
		_, err = strconv.ParseBool(v)
	case "int":
		_, err = strconv.ParseInt(v, 0, 0)
	case "int64":
		_, err = strconv.ParseInt(v, 0, 64)
	case "duration":
		_, err = time.ParseDuration(v)
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("expected %s, got %q", typeName(typ), v)
	}
	return nil
}

func typeName(typ string) string {
	switch typ {
	case "bool":
		return "true or false"
	case "int", "int64":
		return "an integer"
	case "duration":
		return "a duration such as 30s or 2m"
	}
	return "a string"
}

// flagRefRE finds the flags an error message names.
var flagRefRE = regexp.MustCompile("`--([a-z0-9-]+)[` ]")

// Notes say, for each flag an error message about flags names, where it
// got its value, with the config key that sets it: a mistake made in the
// config file is then found in the config file. fromConfig says that a
// value named came from the file or the environment, where the mistake
// then is.
func (e *Effective) Notes(msg string) (notes []string, fromConfig bool) {
	seen := map[string]bool{}
	for _, m := range flagRefRE.FindAllStringSubmatch(msg, -1) {
		flag := m[1]
		if seen[flag] {
			continue
		}
		seen[flag] = true
		path := ""
		for _, k := range keys {
			if k.Flag == flag {
				path = k.Path
			}
		}
		if path == "" {
			continue
		}
		src := e.Sources[flag]
		switch src.Kind {
		case "file":
			fromConfig = true
			notes = append(notes, fmt.Sprintf("`--%s` is %s at %s", flag, path, src.Where))
		case "env":
			fromConfig = true
			notes = append(notes, fmt.Sprintf("`--%s` is $%s", flag, src.Where))
		default:
			if e.File != "" {
				notes = append(notes, fmt.Sprintf("`--%s` is %s in %s, or $%s", flag, path, e.File, EnvName(flag)))
			}
		}
	}
	return notes, fromConfig
}

// Write prints the effective configuration as a config file, each value
// commented with where it came from. It holds no secret: tokens and
// passwords are read from files or variables that the config only names,
// and what could still carry one (a URL's password, an Authorization
// header) is redacted.
func (e *Effective) Write(w io.Writer) error {
	root := &yaml.Node{Kind: yaml.MappingNode}
	for _, key := range keys {
		fl := e.Flags.Lookup(key.Flag)
		if fl == nil {
			continue
		}
		parent := root
		parts := strings.Split(key.Path, ".")
		for _, p := range parts[:len(parts)-1] {
			parent = child(parent, p)
		}
		k := &yaml.Node{Kind: yaml.ScalarNode, Value: parts[len(parts)-1]}
		v := valueNode(fl)
		// The encoder keeps a flow list's comment only on the list.
		if v.Kind == yaml.SequenceNode {
			v.LineComment = e.Sources[key.Flag].String()
		} else {
			k.LineComment = e.Sources[key.Flag].String()
		}
		parent.Content = append(parent.Content, k, v)
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return err
	}
	return enc.Close()
}

// child returns the mapping under key in m, adding it when missing.
func child(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	c := &yaml.Node{Kind: yaml.MappingNode}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, c)
	return c
}

func valueNode(fl *pflag.Flag) *yaml.Node {
	switch typ := fl.Value.Type(); typ {
	case "stringArray":
		seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, v := range fl.Value.(pflag.SliceValue).GetSlice() {
			if fl.Name == "prometheus-header" {
				v = redactHeader(v)
			}
			seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v})
		}
		return seq
	case "bool":
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fl.Value.String()}
	case "int", "int64":
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fl.Value.String()}
	default:
		v := fl.Value.String()
		if strings.HasSuffix(fl.Name, "-url") {
			v = RedactURL(v)
		}
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
		if yaml11Bool(v) {
			// Helm reads values as YAML 1.1 (sigs.k8s.io/yaml), where
			// these words are booleans: unquoted, fleetFindings: off
			// pasted under the chart's config: would be false.
			n.Style = yaml.DoubleQuotedStyle
		}
		return n
	}
}

// yaml11Bool reports whether YAML 1.1 reads plain scalar v as a boolean
// where YAML 1.2 reads a string.
func yaml11Bool(v string) bool {
	switch strings.ToLower(v) {
	case "y", "yes", "n", "no", "on", "off":
		return true
	}
	return false
}

// RedactURL hides a password written into a URL, and its query, where
// tokens travel (?access_token=); a URL that does not parse may hide one
// anywhere, so none of it is shown.
func RedactURL(s string) string {
	if !strings.Contains(s, "://") && scm.IsSSHURL(s) {
		return s // scp-like, user@host:path: no place for a password
	}
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable URL, redacted>"
	}
	if u.RawQuery != "" {
		u.RawQuery = "redacted"
	}
	if u.User == nil {
		return u.String()
	}
	return u.Redacted()
}

// credentialHeaderRE matches the headers that carry credentials.
var credentialHeaderRE = regexp.MustCompile(`(?i)(auth|token|key|secret|password|cookie)`)

// redactHeader hides the value of a header that carries a credential;
// a tenant header (X-Scope-OrgID) is shown, for it says which data is read.
func redactHeader(h string) string {
	name, _, ok := strings.Cut(h, ":")
	if ok && credentialHeaderRE.MatchString(name) {
		return name + ": <redacted>"
	}
	return h
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNullNode(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}
