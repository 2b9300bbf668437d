package local

import (
	"slices"

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
