package local

import (
	"strings"
	"testing"

	"github.com/dshgo/dsh/bash"
)

// TestRefusalsBounded: a refused program's argv, however long, is kept
// (and sent from a jail) cut to a few kilobytes; distinct refusals past
// the first bash.MaxRefusals, and repeats, are counted.
func TestRefusalsBounded(t *testing.T) {
	long := strings.Repeat("é", 100000)
	var argv []string
	for range 1000 {
		argv = append(argv, "x")
	}
	f := ShortRefusal(bash.Refusal{Program: "/" + long, Argv: append([]string{"git", long}, argv...), Rule: "git"})
	size := len(f.Program)
	for _, w := range f.Argv {
		size += len(w)
	}
	if size > 4096 || len(f.Argv) > 66 || f.Argv[0] != "git" || !strings.HasSuffix(f.Argv[len(f.Argv)-1], "…") {
		t.Errorf("cut refusal: %d bytes, %d words, %q…", size, len(f.Argv), f.Argv[:2])
	}
	var r Refusals
	for i := range 8 {
		r.Add(bash.Refusal{Program: "/z", Argv: []string{"z", strings.Repeat("a", i)}, Rule: "z"})
		r.Add(bash.Refusal{Program: "/z", Argv: []string{"z", strings.Repeat("a", i)}, Rule: "z"})
	}
	if list, more := r.List(); len(list) != bash.MaxRefusals || more != 11 {
		t.Errorf("%d kept, %d more; want %d and 11", len(list), more, bash.MaxRefusals)
	}
}
