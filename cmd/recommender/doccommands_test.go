package main

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// repoRoot is the repository's root, seen from this package.
const repoRoot = "../.."

// commandDocs are the documents whose commands a reader runs first, in
// the order they are read: the README, then the guides its commands
// moved to.
var commandDocs = []string{"README.md", "docs/install.md", "docs/usage.md", "docs/pull-requests.md"}

// skippedPrograms are the programs of the documents' shell blocks that
// TestDocCommands cannot try offline, each with the reason. Their paths
// into the repository are still checked. A program neither checked nor
// listed here fails the test, so that no command is passed over in
// silence.
var skippedPrograms = map[string]string{
	"cd":                               "moves into a directory the lines before made",
	"cat":                              "writes a file from the block's here-document",
	"curl":                             "downloads over the network",
	"docker":                           "needs a Docker engine",
	"git":                              "clones or pushes over the network",
	"helm":                             "installs into a cluster",
	"kubectl":                          "needs a cluster",
	"ssh-keygen":                       "writes a key pair",
	"ssh-keyscan":                      "asks a server on the network for its host keys",
	"yq":                               "a tool of the reader's, not of the repository",
	"sha256sum":                        "checks files downloaded from a release",
	"umask":                            "a shell built-in, around a secret's file",
	"printf":                           "writes a secret the reader holds into a file",
	"rm":                               "removes the secret's file once the cluster holds it",
	"./recommender_v1.2.3_linux_amd64": "a binary downloaded from a release (its `version` command is checked as `recommender version`)",
}

// docCommand is one simple command of a document: its words, with the
// line it starts on.
type docCommand struct {
	doc    string
	line   int
	words  []string
	inline bool // from a code span of the prose, not a shell block
}

func (c docCommand) String() string {
	return fmt.Sprintf("%s:%d: %s", c.doc, c.line, strings.Join(c.words, " "))
}

// TestDocCommands: every command of the shell blocks of the README and
// the guides of commandDocs that can be tried without a network or a
// cluster works as written — each `make` target is one of the Makefile's; each
// `recommender`, `bin/recommender` and `go run ./cmd/recommender` command
// line is one the CLI parses (the command exists, each flag is one of that
// command's, each value has the flag's type, the positional arguments are
// what the command takes); each `go` package and each path into the
// repository exists. Code spans of the prose that start with one of those
// programs are held to the same checks. The commands the test cannot try
// are skipped by program, with the reason (skippedPrograms).
func TestDocCommands(t *testing.T) {
	targets := makeTargets(t)
	checked, skipped := 0, map[string][]string{}
	var first []docCommand
	for _, doc := range commandDocs {
		b, err := os.ReadFile(filepath.Join(repoRoot, doc))
		require.NoError(t, err)
		for _, c := range docCommands(t, doc, string(b)) {
			if c.inline && !checkedProgram(c.words) {
				continue // a code span of the prose that is no command of ours
			}
			if doc == "README.md" && !c.inline && len(first) < 2 {
				first = append(first, c)
			}
			reason, err := checkDocCommand(c.words, targets)
			switch {
			case err != nil:
				t.Errorf("%s\n\t%v", c, err)
			case reason == "":
				checked++
			default:
				skipped[reason] = append(skipped[reason], fmt.Sprintf("%s:%d", c.doc, c.line))
			}
		}
	}
	t.Logf("%d commands checked", checked)
	for _, reason := range slices.Sorted(maps.Keys(skipped)) {
		t.Logf("skipped (%s): %s", reason, strings.Join(skipped[reason], ", "))
	}
	// The quickstart's two commands are the first a reader runs.
	require.Len(t, first, 2)
	require.Equal(t, []string{"make", "demo"}, first[0].words, first[0].String())
	require.Equal(t, []string{"make", "test"}, first[1].words, first[1].String())
	require.Greater(t, checked, 20, "the commands were found")
}

// TestDocCommandsCatch: the checks refuse what a README could get wrong.
func TestDocCommandsCatch(t *testing.T) {
	targets := makeTargets(t)
	tests := []struct {
		name, line, err string
	}{
		{name: "a make target the Makefile lacks", line: "make demoo", err: `no target "demoo" in the Makefile`},
		{name: "an unknown command", line: "go run ./cmd/recommender plam --repo .", err: `unknown command "plam"`},
		{name: "a flag of another command", line: "recommender plan --scm local", err: "unknown flag: --scm"},
		{name: "a value of the wrong type", line: "bin/recommender backtest --cadence soon", err: `invalid argument "soon"`},
		{name: "an argument where none is taken", line: "recommender plan examples/quickstart", err: "unknown command \"examples/quickstart\""},
		{name: "a path the repository lacks", line: "recommender plan --repo examples/quickstrat", err: "examples/quickstrat: no such file or directory"},
		{name: "a path in a name=path value", line: "recommender backtest --policies a=examples/nothing", err: "examples/nothing"},
		{name: "a package the repository lacks", line: "go test ./internal/nothing/", err: "./internal/nothing/: no such"},
		{name: "another program's main package", line: "go run ./internal/plan plan", err: "go run runs ./cmd/recommender only here"},
		{name: "a program the test does not know", line: "terraform apply", err: `no check and no reason to skip "terraform"`},
		{name: "an optional flag in brackets is still a flag", line: "recommender run [--dry-rnu]", err: "unknown flag: --dry-rnu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmds := docCommands(t, "x.md", "```sh\n"+tt.line+"\n```\n")
			require.Len(t, cmds, 1)
			_, err := checkDocCommand(cmds[0].words, targets)
			require.ErrorContains(t, err, tt.err)
		})
	}
}

// makeTargets is the Makefile's targets.
func makeTargets(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	require.NoError(t, err)
	var targets []string
	for _, m := range regexp.MustCompile(`(?m)^([A-Za-z0-9_-][A-Za-z0-9_.-]*)\s*:([^=]|$)`).FindAllStringSubmatch(string(b), -1) {
		targets = append(targets, m[1])
	}
	require.Contains(t, targets, "demo")
	return targets
}

var (
	fence    = regexp.MustCompile("^\\s*```\\s*([A-Za-z]*)")
	codeSpan = regexp.MustCompile("`([^`]+)`")
)

// docCommands is every simple command of a Markdown document: those of
// its sh, bash and shell blocks, and those of its code spans outside the
// blocks (the caller tells them apart by inline).
func docCommands(t *testing.T, doc, text string) []docCommand {
	t.Helper()
	lines := strings.Split(text, "\n")
	var cmds []docCommand
	var prose strings.Builder
	inBlock, shell := false, false
	heredoc := ""
	pending, start := "", 0
	for i, l := range lines {
		n := i + 1
		if m := fence.FindStringSubmatch(l); m != nil {
			inBlock = !inBlock
			shell = inBlock && slices.Contains([]string{"sh", "bash", "shell"}, m[1])
			prose.WriteString("\n")
			continue
		}
		if !inBlock {
			prose.WriteString(l + "\n")
			continue
		}
		prose.WriteString("\n")
		switch {
		case !shell:
			continue
		case heredoc != "":
			if strings.TrimSpace(l) == heredoc {
				heredoc = ""
			}
			continue
		}
		if pending == "" {
			start = n
		}
		if cont, ok := strings.CutSuffix(l, `\`); ok {
			pending += cont + " "
			continue
		}
		line := pending + l
		pending = ""
		segments, end, err := shellSegments(line)
		require.NoError(t, err, "%s:%d", doc, start)
		heredoc = end
		for _, words := range segments {
			cmds = append(cmds, docCommand{doc: doc, line: start, words: words})
		}
	}
	// Code spans, found in the prose with the blocks blanked out, so that
	// a line number is still the document's.
	text = prose.String()
	for _, m := range codeSpan.FindAllStringSubmatchIndex(text, -1) {
		span := strings.ReplaceAll(text[m[2]:m[3]], "\n", " ")
		segments, _, err := shellSegments(span)
		if err != nil {
			continue // not shell: e.g. an unbalanced quote in a YAML value
		}
		line := strings.Count(text[:m[0]], "\n") + 1
		for _, words := range segments {
			cmds = append(cmds, docCommand{doc: doc, line: line, words: words, inline: true})
		}
	}
	return cmds
}

// shellSegments splits a line of shell into its simple commands' words:
// quotes and backslashes as the shell reads them, a comment dropped,
// redirections and their targets dropped, and the commands apart at
// &&, ||, |, ; and &. heredoc is the delimiter of a here-document the
// line starts, if any.
func shellSegments(line string) (segments [][]string, heredoc string, err error) {
	var words []string
	var word strings.Builder
	inWord, redirect := false, false
	flush := func() {
		if !inWord {
			return
		}
		w := word.String()
		word.Reset()
		inWord = false
		if redirect {
			redirect = false
			if strings.HasPrefix(w, "<<") {
				heredoc = strings.Trim(strings.TrimPrefix(w, "<<"), `'"-`)
			}
			return
		}
		words = append(words, w)
	}
	cut := func() {
		flush()
		if len(words) > 0 {
			segments = append(segments, words)
		}
		words = nil
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, "", errors.New("an unclosed single quote")
			}
			word.WriteString(line[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case c == '"':
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) {
					j++
				}
				word.WriteByte(line[j])
			}
			if j >= len(line) {
				return nil, "", errors.New("an unclosed double quote")
			}
			inWord, i = true, j
		case c == '\\' && i+1 < len(line):
			word.WriteByte(line[i+1])
			inWord, i = true, i+1
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			cut()
			return segments, heredoc, nil
		case c == '&' || c == '|' || c == ';':
			cut()
			if i+1 < len(line) && line[i+1] == c {
				i++
			}
		case c == '>' || c == '<':
			// A redirection: the word it is glued to (2>) is its file
			// descriptor, and the next word its target; <<END starts a
			// here-document.
			if inWord && strings.Trim(word.String(), "0123456789") == "" {
				word.Reset()
				inWord = false
			}
			flush()
			redirect = true
			if c == '<' && i+1 < len(line) && line[i+1] == '<' {
				word.WriteString("<<")
				inWord, i = true, i+1
			}
			for i+1 < len(line) && (line[i+1] == '>' || line[i+1] == '&') {
				i++
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	cut()
	return segments, heredoc, nil
}

// envAssignment is a variable set for one command: NAME=value.
var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// checkedProgram reports whether the command's program is one that
// checkDocCommand tries: make, go, the recommender, a script of the
// repository.
func checkedProgram(words []string) bool {
	for len(words) > 0 && envAssignment.MatchString(words[0]) {
		words = words[1:]
	}
	if len(words) == 0 {
		return false
	}
	switch p := words[0]; p {
	case "make", "go", "recommender", "bin/recommender", "./bin/recommender":
		return true
	default:
		return inRepo(p)
	}
}

// checkDocCommand tries one simple command without running it. It returns
// the reason when the command's program cannot be tried offline, and an
// error when the command does not work as written.
func checkDocCommand(words []string, targets []string) (skipped string, err error) {
	for len(words) > 0 && envAssignment.MatchString(words[0]) {
		words = words[1:]
	}
	if len(words) == 0 {
		return "", nil
	}
	if err := checkRepoPaths(words); err != nil {
		return "", err
	}
	prog, args := words[0], words[1:]
	switch {
	case prog == "make":
		for _, a := range args {
			if envAssignment.MatchString(a) {
				continue
			}
			if !slices.Contains(targets, a) {
				return "", fmt.Errorf("no target %q in the Makefile", a)
			}
		}
		return "", nil
	case prog == "recommender" || prog == "bin/recommender" || prog == "./bin/recommender":
		return "", checkCLI(args)
	case prog == "go":
		return "", checkGo(args)
	case inRepo(prog):
		// A script of the repository: its path was checked above.
		return "", nil
	}
	if reason, ok := skippedPrograms[prog]; ok {
		return reason, nil
	}
	return "", fmt.Errorf("no check and no reason to skip %q: check it in checkDocCommand or add it to skippedPrograms", prog)
}

// checkCLI parses a command line as Main would, up to running it: the
// command is found in the tree, its flags parsed (types included) and its
// positional arguments checked. A word in brackets is an optional flag of
// the usage notation, and is parsed as the flag.
func checkCLI(args []string) error {
	args = slices.Clone(args)
	for i, a := range args {
		if strings.HasPrefix(a, "[") && strings.HasSuffix(a, "]") {
			args[i] = strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
		}
	}
	var out bytes.Buffer
	root := newCmdRoot(streams{Out: &out, Err: &out}, nil)
	// What cobra's Execute adds before it finds the command.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd(args...)
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if cmd == root && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		// An unknown command, said as such rather than as its first flag.
		return root.ValidateArgs(rest[:1])
	}
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	return cmd.ValidateArgs(cmd.Flags().Args())
}

// checkGo checks a go command: go run runs the recommender, and the
// packages go test, build, install and vet name exist.
func checkGo(args []string) error {
	if len(args) == 0 {
		return errors.New("go with no command")
	}
	sub, rest := args[0], args[1:]
	var pkgs []string
	i := 0
	for ; i < len(rest); i++ {
		if !strings.HasPrefix(rest[i], "-") {
			break
		}
	}
	switch sub {
	case "run":
		if i == len(rest) || strings.TrimSuffix(rest[i], "/") != "./cmd/recommender" {
			return errors.New("go run runs ./cmd/recommender only here")
		}
		return checkCLI(rest[i+1:])
	case "test", "build", "install", "vet", "list", "generate":
		for _, a := range rest {
			if !strings.HasPrefix(a, "-") {
				pkgs = append(pkgs, a)
			}
		}
	default:
		return fmt.Errorf("go %s: no check for it", sub)
	}
	const module = "github.com/gpu-rightsizing/recommender"
	for _, p := range pkgs {
		p, _, _ = strings.Cut(p, "@")
		dir := p
		switch {
		case p == module || strings.HasPrefix(p, module+"/"):
			dir = "." + strings.TrimPrefix(p, module)
		case !strings.HasPrefix(p, "./"):
			continue // a test's value, e.g. -run's
		}
		dir = strings.TrimSuffix(strings.TrimSuffix(dir, "..."), "/")
		if _, err := os.Stat(filepath.Join(repoRoot, dir)); err != nil {
			return fmt.Errorf("package %s: %w", p, err)
		}
	}
	return nil
}

// checkRepoPaths: every word that is a path into the repository (its
// first element one of the root's files or directories), alone, as a
// flag's value (--flag=path) or as a name's (name=path), exists.
func checkRepoPaths(words []string) error {
	for _, w := range words {
		candidates := []string{w}
		if _, v, ok := strings.Cut(w, "="); ok {
			candidates = append(candidates, v)
		}
		for _, p := range candidates {
			if !inRepo(p) {
				continue
			}
			if _, err := os.Stat(filepath.Join(repoRoot, p)); err != nil {
				return fmt.Errorf("%s: no such file or directory in the repository", p)
			}
		}
	}
	return nil
}

// inRepo reports whether p is a relative path whose first element is one
// of the repository root's entries: not bin/, which only a build makes,
// nor .git/, which a document names in the reader's own repository.
func inRepo(p string) bool {
	p = strings.TrimPrefix(p, "./")
	if strings.Contains(p, "://") || filepath.IsAbs(p) || !strings.Contains(p, "/") {
		return false
	}
	first, _, _ := strings.Cut(p, "/")
	if first == "" || first == "." || first == ".." || first == ".git" || first == "bin" {
		return false
	}
	_, err := os.Stat(filepath.Join(repoRoot, first))
	return err == nil
}
