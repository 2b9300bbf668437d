package local

import (
	"slices"
	"unicode/utf8"

	"github.com/dshgo/dsh/bash"
)

// Refusals collects a command's refused execs, for a SpawnFunc's
// ExitStatus: the first bash.MaxRefusals that differ, and a count of the
// others. The zero value is empty; it is not safe for concurrent use.
type Refusals struct {
	first []bash.Refusal
	more  int
}

// Add adds one refusal.
func (r *Refusals) Add(f bash.Refusal) {
	f = ShortRefusal(f)
	for _, g := range r.first {
		if g.Program == f.Program && g.Rule == f.Rule && slices.Equal(g.Argv, f.Argv) {
			r.more++
			return
		}
	}
	if len(r.first) >= bash.MaxRefusals {
		r.more++
		return
	}
	r.first = append(r.first, f)
}

// List returns the refusals kept and the count of the others.
func (r *Refusals) List() ([]bash.Refusal, int) {
	return slices.Clone(r.first), r.more
}

// ShortRefusal cuts a refusal's argv and program to what a result shows
// and a message can carry: a few kilobytes, however long the argv was.
func ShortRefusal(f bash.Refusal) bash.Refusal {
	f.Program = cut(f.Program, maxRefusalWord)
	n, argv := 0, make([]string, 0, min(len(f.Argv), maxRefusalWords))
	for _, w := range f.Argv {
		if len(argv) == maxRefusalWords || n > maxRefusalBytes {
			argv = append(argv, "…")
			break
		}
		w = cut(w, maxRefusalWord)
		argv, n = append(argv, w), n+len(w)
	}
	f.Argv = argv
	return f
}

// The bounds of a refusal kept (ShortRefusal).
const (
	maxRefusalWord  = 512
	maxRefusalWords = 64
	maxRefusalBytes = 2048
)

// cut shortens s to at most n bytes, at a character's start.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
