package arch_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The budget of a document people read: sentences one can take in at
// once (KRR's README runs 11 words a sentence, Renovate's docs 14 to
// 18), and table cells that hold a value, not a paragraph.
const (
	maxMeanWords     = 18.0
	maxSentenceWords = 40
	maxCellWords     = 40
)

// docFigures is what the budget measures of one document.
type docFigures struct {
	Sentences int
	Mean      float64 // words per sentence, rounded to one decimal
	P90       int     // the sentence at the 90th percentile, nearest rank below
	Longest   int     // words of the longest sentence
	Over40    int     // sentences longer than maxSentenceWords
	Cell      int     // words of the longest table cell
	long      []string
	longCells []string
}

// docException is a document that does not meet the budget yet, with
// the figures it may not exceed.
type docException struct {
	Mean    float64
	Longest int
	Over40  int
	Cell    int
	line    int
}

// TestDocBudget: README.md, CONTRIBUTING.md, BENCHMARKS.md, the chart's and
// the examples' READMEs and every
// Markdown file under docs/ meet the budget: words per sentence at most
// 18 on average, no sentence over 40 words, no table cell over 40 words.
// A document that does not yet is named in testdata/docs-exceptions.txt
// with its figures and why. The list only shrinks: a listed document that
// gets worse than its figures fails, and so does one that meets the
// budget and is still listed. -v prints every document's figures.
func TestDocBudget(t *testing.T) {
	exceptions := readDocExceptions(t)
	docs := budgetedDocs(t)
	for _, doc := range docs {
		b, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		f := measureDoc(string(b))
		t.Logf("%s: %d sentences, mean %.1f, p90 %d, longest %d, over %d words %d (%.0f %%), longest cell %d",
			doc, f.Sentences, f.Mean, f.P90, f.Longest, maxSentenceWords, f.Over40, f.share(), f.Cell)
		exc, listed := exceptions[doc]
		for _, p := range budgetProblems(f, exc, listed) {
			t.Errorf("%s: %s", doc, p)
		}
	}
	for doc, exc := range exceptions {
		if !slices.Contains(docs, doc) {
			t.Errorf("testdata/docs-exceptions.txt:%d names %s, which is gone or not measured: remove it", exc.line, doc)
		}
	}
}

// budgetProblems says how a document's figures break the budget, or its
// exception when it is listed.
func budgetProblems(f docFigures, exc docException, listed bool) []string {
	var out []string
	meets := f.Mean <= maxMeanWords && f.Longest <= maxSentenceWords && f.Cell <= maxCellWords
	switch {
	case meets && listed:
		out = append(out, "meets the budget now: remove it from testdata/docs-exceptions.txt")
	case meets:
	case !listed:
		out = append(out, fmt.Sprintf("mean %.1f words a sentence (at most %.0f), longest sentence %d words and longest cell %d (at most %d and %d): shorten it",
			f.Mean, maxMeanWords, f.Longest, f.Cell, maxSentenceWords, maxCellWords))
	default:
		if f.Mean > exc.Mean {
			out = append(out, fmt.Sprintf("mean %.1f words a sentence, worse than its exception's %.1f", f.Mean, exc.Mean))
		}
		if f.Longest > exc.Longest {
			out = append(out, fmt.Sprintf("a sentence of %d words, longer than its exception's %d", f.Longest, exc.Longest))
		}
		if f.Over40 > exc.Over40 {
			out = append(out, fmt.Sprintf("%d sentences over %d words, more than its exception's %d", f.Over40, maxSentenceWords, exc.Over40))
		}
		if f.Cell > exc.Cell {
			out = append(out, fmt.Sprintf("a table cell of %d words, longer than its exception's %d", f.Cell, exc.Cell))
		}
		if len(out) == 0 {
			return nil
		}
	}
	if len(out) > 0 && !(meets && listed) {
		for _, s := range f.long {
			out = append(out, "long sentence: "+s)
		}
		for _, c := range f.longCells {
			out = append(out, "long cell: "+c)
		}
	}
	return out
}

func (f docFigures) share() float64 {
	if f.Sentences == 0 {
		return 0
	}
	return 100 * float64(f.Over40) / float64(f.Sentences)
}

// budgetedDocs is the documents the budget holds, relative to the
// repository's root, in a stable order.
func budgetedDocs(t *testing.T) []string {
	t.Helper()
	root := filepath.Join("..", "..")
	docs := []string{"README.md", "CONTRIBUTING.md", "BENCHMARKS.md", "charts/recommender/README.md"}
	examples, err := filepath.Glob(filepath.Join(root, "examples", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range examples {
		rel, err := filepath.Rel(root, e)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, filepath.ToSlash(rel))
	}
	err = filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		rel, err := filepath.Rel(root, path)
		docs = append(docs, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// exceptionLine is "path mean=M longest=L over40=N cell=C: why".
var exceptionLine = regexp.MustCompile(`^(\S+) mean=([0-9.]+) longest=(\d+) over40=(\d+) cell=(\d+): (\S.*)$`)

// readDocExceptions reads testdata/docs-exceptions.txt; # starts a comment.
func readDocExceptions(t *testing.T) map[string]docException {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "docs-exceptions.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]docException{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := exceptionLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("testdata/docs-exceptions.txt:%d: want \"path mean=M longest=L over40=N cell=C: why\"", n)
		}
		mean, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatalf("testdata/docs-exceptions.txt:%d: mean: %v", n, err)
		}
		atoi := func(s string) int { v, _ := strconv.Atoi(s); return v } // \d+ matched
		if _, dup := out[m[1]]; dup {
			t.Fatalf("testdata/docs-exceptions.txt:%d: %s is listed twice", n, m[1])
		}
		out[m[1]] = docException{Mean: mean, Longest: atoi(m[3]), Over40: atoi(m[4]), Cell: atoi(m[5]), line: n}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// measureDoc measures a Markdown document's prose, as
// ../shared/tools/docstats does (the figures agree but for escaped
// pipes, which it splits cells at):
//
//  1. HTML comments are dropped, and so are fenced code blocks (from a
//     line starting with ``` or ~~~ to the next such line) and headings.
//  2. A line starting with | is a table row: its cells, split at | but
//     not at \|, are measured alone; the |---| row is dropped.
//  3. The other lines make paragraphs: a blank line or a list item (-,
//     *, +, 1. or 1)) starts a new one.
//  4. In a paragraph, an inline code span is one word, and e.g., i.e.,
//     etc., vs. and cf. end no sentence.
//  5. A sentence ends at ., ! or ? followed by white space and then a
//     capital letter, (, `, *, " or '.
//  6. A word is a run of non-space characters holding a letter or a
//     digit; a link counts its text, not its target. A sentence of fewer
//     than three words (a label, a fragment) is not counted.
func measureDoc(text string) docFigures {
	paragraphs, cells := proseAndCells(text)
	var lens []int
	var f docFigures
	for _, p := range paragraphs {
		for _, s := range splitSentences(p) {
			n := len(docWords(s))
			lens = append(lens, n)
			if n > maxSentenceWords {
				f.Over40++
				f.long = append(f.long, fmt.Sprintf("(%d words) %s", n, clip(s)))
			}
		}
	}
	for _, c := range cells {
		n := len(docWords(c))
		f.Cell = max(f.Cell, n)
		if n > maxCellWords {
			f.longCells = append(f.longCells, fmt.Sprintf("(%d words) %s", n, clip(c)))
		}
	}
	if len(lens) == 0 {
		return f
	}
	slices.Sort(lens)
	sum := 0
	for _, n := range lens {
		sum += n
	}
	f.Sentences = len(lens)
	f.Mean = math.Round(10*float64(sum)/float64(len(lens))) / 10
	f.P90 = lens[int(0.9*float64(len(lens)-1))]
	f.Longest = lens[len(lens)-1]
	return f
}

// clip is the start of a long text, enough to find it in the document.
func clip(s string) string {
	if w := strings.Fields(s); len(w) > 12 {
		return strings.Join(w[:12], " ") + " …"
	}
	return s
}

var (
	htmlComment  = regexp.MustCompile(`(?s)<!--.*?-->`)
	delimiterRow = regexp.MustCompile(`^\|?[\s:|-]+\|?$`)
	listItem     = regexp.MustCompile(`^([-*+]|\d+[.)])\s+`)
	inlineCode   = regexp.MustCompile("`[^`]*`")
	abbrev       = regexp.MustCompile(`\b(e\.g|i\.e|etc|vs|cf)\.`)
	mdLink       = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	escapedPipe  = "\x00"
)

// proseAndCells is a document's paragraphs and table cells (steps 1 to
// 3 of measureDoc).
func proseAndCells(text string) (paragraphs, cells []string) {
	text = htmlComment.ReplaceAllString(text, "")
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			paragraphs = append(paragraphs, strings.Join(cur, " "))
		}
		cur = nil
	}
	fenced := false
	for _, raw := range strings.Split(text, "\n") {
		s := strings.TrimSpace(raw)
		switch {
		case strings.HasPrefix(s, "```") || strings.HasPrefix(s, "~~~"):
			fenced = !fenced
		case fenced || strings.HasPrefix(s, "#"):
		case strings.HasPrefix(s, "|"):
			if delimiterRow.MatchString(s) {
				continue
			}
			row := strings.ReplaceAll(strings.Trim(s, "|"), `\|`, escapedPipe)
			for _, c := range strings.Split(row, "|") {
				cells = append(cells, strings.TrimSpace(strings.ReplaceAll(c, escapedPipe, "|")))
			}
		case s == "":
			flush()
		case listItem.MatchString(s):
			flush()
			cur = []string{listItem.ReplaceAllString(s, "")}
		default:
			cur = append(cur, s)
		}
	}
	flush()
	return paragraphs, cells
}

// splitSentences is a paragraph's sentences of three words or more
// (steps 4 to 6 of measureDoc).
func splitSentences(p string) []string {
	p = inlineCode.ReplaceAllString(p, "CODE")
	p = abbrev.ReplaceAllString(p, "$1")
	var out []string
	keep := func(s string) {
		if len(docWords(s)) >= 3 {
			out = append(out, s)
		}
	}
	start := 0
	r := []rune(p)
	for i := 0; i < len(r); i++ {
		if !strings.ContainsRune(".!?", r[i]) {
			continue
		}
		j := i + 1
		for j < len(r) && unicode.IsSpace(r[j]) {
			j++
		}
		if j == i+1 || j == len(r) || !(r[j] >= 'A' && r[j] <= 'Z' || strings.ContainsRune("(`*\"'", r[j])) {
			continue
		}
		keep(string(r[start : i+1]))
		start, i = j, j-1
	}
	keep(string(r[start:]))
	return out
}

// docWords is a text's words (step 6 of measureDoc).
func docWords(s string) []string {
	s = inlineCode.ReplaceAllString(s, "CODE")
	s = mdLink.ReplaceAllString(s, "$1")
	var out []string
	for _, w := range strings.Fields(s) {
		if strings.IndexFunc(w, func(r rune) bool { return r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) }) >= 0 {
			out = append(out, w)
		}
	}
	return out
}

// TestDocBudgetCatches: the budget fails a document that breaks it, an
// exception that got worse and one no longer needed, and measures prose
// only.
func TestDocBudgetCatches(t *testing.T) {
	sixty := strings.TrimSpace(strings.Repeat("word ", 59)) + " end."
	short := "The tool reads usage. It writes a pull request. People merge it.\n"
	tests := []struct {
		name   string
		doc    string
		exc    *docException
		want   string // in a problem; "" for none
		figure func(docFigures) int
		value  int
	}{
		{name: "a planted 60-word sentence fails", doc: short + "\n" + sixty + "\n", want: "longest sentence 60 words"},
		{name: "the planted sentence is named", doc: short + "\n" + sixty + "\n", want: "long sentence: (60 words) word word"},
		{name: "a listed document that gets worse fails", doc: short + "\n" + sixty + "\n",
			exc: &docException{Mean: 30, Longest: 50, Over40: 1, Cell: 0}, want: "a sentence of 60 words, longer than its exception's 50"},
		{name: "a listed document with one more long sentence fails", doc: sixty + "\n\n" + sixty + "\n",
			exc: &docException{Mean: 60, Longest: 60, Over40: 1, Cell: 0}, want: "2 sentences over 40 words, more than its exception's 1"},
		{name: "a listed document within its figures passes", doc: short + "\n" + sixty + "\n",
			exc: &docException{Mean: 30, Longest: 60, Over40: 1, Cell: 0}},
		{name: "a listed document that meets the budget fails", doc: short, exc: &docException{Mean: 30, Longest: 60, Over40: 1},
			want: "meets the budget now: remove it"},
		{name: "a 41-word table cell fails", doc: short + "\n| a | b |\n|---|---|\n| x | " + strings.Repeat("w ", 41) + "|\n",
			want: "longest cell 41"},
		{name: "a mean over 18 fails", doc: strings.Repeat("Word "+strings.Repeat("word ", 18)+"end. ", 3) + "\n", want: "mean 20.0 words"},
		{name: "a code block is not prose", doc: short + "```sh\n" + sixty + "\n```\n"},
		{name: "a heading is not prose", doc: "# " + sixty + "\n" + short},
		{name: "an HTML comment is not prose", doc: "<!-- " + sixty + " -->\n" + short},
		{name: "inline code is one word", doc: "Run `" + sixty + "` now, please.\n",
			figure: func(f docFigures) int { return f.Longest }, value: 4},
		{name: "a link counts its text only", doc: "Read [the design](docs/design.md#a-very-long-anchor-that-is-no-word) first.\n",
			figure: func(f docFigures) int { return f.Longest }, value: 4},
		{name: "e.g. ends no sentence", doc: "Use a unit, e.g. Minutes as in 30m here.\n",
			figure: func(f docFigures) int { return f.Sentences }, value: 1},
		{name: "a sentence ends before a capital", doc: "One two three. Four five six. seven eight nine.\n",
			figure: func(f docFigures) int { return f.Sentences }, value: 2},
		{name: "a list item is a paragraph of its own", doc: "- one two three\n- four five six\n",
			figure: func(f docFigures) int { return f.Sentences }, value: 2},
		{name: "fewer than three words are no sentence", doc: "Status: fine.\n\nOne two three.\n",
			figure: func(f docFigures) int { return f.Sentences }, value: 1},
		{name: "an escaped pipe splits no cell", doc: "| flag | what |\n|---|---|\n| `--x a\\|b` | " + strings.Repeat("w ", 20) + "x\\|y " + strings.Repeat("w ", 20) + "|\n",
			figure: func(f docFigures) int { return f.Cell }, value: 41},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := measureDoc(tt.doc)
			if tt.figure != nil {
				if got := tt.figure(f); got != tt.value {
					t.Fatalf("got %d, want %d (%+v)", got, tt.value, f)
				}
				return
			}
			var exc docException
			if tt.exc != nil {
				exc = *tt.exc
			}
			problems := strings.Join(budgetProblems(f, exc, tt.exc != nil), "\n")
			switch {
			case tt.want == "" && problems != "":
				t.Fatalf("want no problem, got:\n%s", problems)
			case !strings.Contains(problems, tt.want):
				t.Fatalf("want a problem with %q, got:\n%s", tt.want, problems)
			}
		})
	}
}
