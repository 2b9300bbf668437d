package toolbash

import (
	"unicode/utf8"

	"github.com/dshgo/dsh/bash"
)

// How one result's text is made to fit the clients' limits.
//
// Real clients cut long tool results on their own terms: Claude Code
// replaces a result over 50,000 characters with a 2 KB preview of its head
// (the tail and its markers are lost), Codex shows the model about 12 KB.
// So the whole text of one result — both streams, the [stderr] heading, the
// truncation notes and the status markers together — is kept within a
// budget of characters (Unicode code points), DefaultMaxResultChars unless
// Options.MaxResultChars says otherwise. The rules, in order:
//
//  0. A text that fits the budget as it is goes out whole.
//  1. The fixed parts always survive: every marker, note and spill path.
//     What is left of the budget goes to the two streams' text.
//  2. A stream whose head the executor already cut (Output.Truncated) first
//     loses its partial first line (see 4).
//  3. When both streams together still have more characters than what is
//     left, each stream may take half of it, and what one of them does not
//     need goes to the other: a flood on stdout never squeezes stderr (often
//     the part that matters) below half, and a short stream costs the other
//     nothing.
//  4. A stream over its share keeps its last characters (its tail). Since
//     the cut may fall inside a line, the kept text then starts after the
//     first newline among its first lineWindow characters; a line longer
//     than that is kept from the cut on. A stream cut this way is reported
//     as truncated, with the spill file the executor keeps of it (every
//     stream longer than SpillAfter bytes has one) or "(unavailable)".
//
// A result that has no spare room at all (a budget smaller than its
// markers) keeps the markers and no output.

// DefaultMaxResultChars is the default budget of one result's text.
const DefaultMaxResultChars = 30000

// lineWindow is how far into a cut stream the first newline is looked for.
const lineWindow = 1000

// markerReserve is what a result's fixed parts are assumed to take at most
// when working out the smallest share a stream can get (see spillAfter).
const markerReserve = 1000

// budgeted renders r, whose two streams streams points at, within maxChars
// characters (none: maxChars <= 0) by the rules above.
func budgeted[R any](r R, maxChars int, streams func(*R) (*bash.Output, *bash.Output), render func(R) string) string {
	o, e := streams(&r)
	*o, *e = atLineStart(*o), atLineStart(*e)
	text := render(r)
	if maxChars <= 0 || fits(text, maxChars) {
		return text
	}
	bare := r
	stripStreams(streams(&bare))
	*o, *e = fitStreams(*o, *e, maxChars-fixedChars(render(bare)))
	return render(r)
}

// atLineStart applies rule 2: a stream whose head the executor cut starts
// at a line.
func atLineStart(o bash.Output) bash.Output {
	if o.Truncated {
		o.Text = fromLineStart(o.Text)
	}
	return o
}

// fits reports whether text has at most max characters.
func fits(text string, max int) bool {
	return len(text) <= max || utf8.RuneCountInString(text) <= max
}

// fitStreams cuts stdout and stderr so that their text together has at most
// avail characters, by rules 3 and 4 above.
func fitStreams(stdout, stderr bash.Output, avail int) (bash.Output, bash.Output) {
	n1, n2 := utf8.RuneCountInString(stdout.Text), utf8.RuneCountInString(stderr.Text)
	if n1+n2 <= avail {
		return stdout, stderr
	}
	s1, s2 := shares(max(avail, 0), n1, n2)
	cut(&stdout, n1, s1)
	cut(&stderr, n2, s2)
	return stdout, stderr
}

// shares splits avail characters between streams of n1 and n2 characters:
// each may take half, and what one does not need goes to the other.
func shares(avail, n1, n2 int) (int, int) {
	half := avail / 2
	s2 := min(n2, max(avail-half, avail-n1))
	return min(n1, avail-s2), s2
}

// cut keeps the last keep of o's n characters, from a line start.
func cut(o *bash.Output, n, keep int) {
	if n <= keep {
		return
	}
	s := o.Text
	for skip := n - keep; skip > 0; skip-- {
		_, size := utf8.DecodeRuneInString(s)
		s = s[size:]
	}
	o.Text = fromLineStart(s)
	o.Truncated = true
}

// fromLineStart drops a cut text's partial first line: everything up to
// and including the first newline among its first lineWindow characters.
// With no newline there, the text is kept whole.
func fromLineStart(s string) string {
	chars := 0
	for i, r := range s {
		if r == '\n' {
			return s[i+1:]
		}
		if chars++; chars >= lineWindow {
			break
		}
	}
	return s
}

// fixedChars is what a text rendered with stripped streams (see
// stripStreams) takes of the budget: its characters plus the newlines that
// the real text may add before the two streams' notes (a note goes on a
// line of its own, after a text that may not end in a newline).
func fixedChars(bare string) int {
	const slack = 2
	return utf8.RuneCountInString(bare) + slack
}

// stripStreams empties both streams' text, keeping their notes: a stream
// that had text is marked truncated, since it may be cut.
func stripStreams(stdout, stderr *bash.Output) {
	for _, o := range []*bash.Output{stdout, stderr} {
		if o.Text != "" {
			o.Truncated = true
		}
		o.Text = ""
	}
}

// spillAfter is the stream length, in bytes, past which an executor must
// keep a complete spill file of a stream, so that a stream cut to fit a
// budget of maxChars characters can still be read whole: the smallest share
// a stream can get. A stream of at most that many bytes has at most that
// many characters, and is never cut.
func spillAfter(maxChars int) int64 {
	return int64(max(maxChars-markerReserve, 2) / 2)
}
