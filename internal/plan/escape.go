package plan

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable escapes what a terminal would act on rather than show: control
// characters (newlines and tabs too, unless keep lists them), DEL, C1
// controls, bidirectional overrides and invalid UTF-8, the way Go quotes
// strings. Names and values from a repository reach the table through it,
// so that no manifest can forge a row or colour the terminal.
func printable(s, keep string) string {
	if !needsEscape(s, keep) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		case shown(r, keep):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// Printable is s with everything a terminal would act on escaped: every
// command that prints names, reasons or errors from a repository, a forge
// or a usage source prints them through it.
func Printable(s string) string { return printable(s, "") }

// PrintableLines is Printable that keeps line breaks and tabs: for
// messages of several lines, such as an error that lists problems.
func PrintableLines(s string) string { return printable(s, "\n\t") }

func needsEscape(s, keep string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || !shown(r, keep) {
			return true
		}
		i += size
	}
	return false
}

// shown reports whether r may reach a terminal as it is.
func shown(r rune, keep string) bool {
	return unicode.IsPrint(r) || strings.ContainsRune(keep, r)
}

// MarkdownCell escapes text for one Markdown table cell or list item, as
// the plan's Markdown does: no line break, no pipe, no markup or HTML of
// the text's own (so no hidden comment either).
func MarkdownCell(s string) string { return mdCell(s) }
