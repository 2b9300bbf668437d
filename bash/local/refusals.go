package local

import (
	"slices"

	"github.com/dshgo/dsh/bash"
)

// refusals collects a command's refused execs: the first bash.MaxRefusals
// that differ, and a count of the others.
type refusals struct {
	first []bash.Refusal
	more  int
}

func (r *refusals) add(f bash.Refusal) {
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

func (r *refusals) list() ([]bash.Refusal, int) {
	return slices.Clone(r.first), r.more
}
