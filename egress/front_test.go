package egress

import (
	"context"
	"testing"
)

// TestSetFront: a front end made after the proxy asks its users and is
// told of refusals once it sets itself (SetFront), and no longer once it
// unsets itself; RefusalText is what a refused client reads.
func TestSetFront(t *testing.T) {
	p, err := New(&Options{Resolve: resolveFake})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	check := func() Reason {
		if _, ref := p.check(t.Context(), "s", "registry.test", 443); ref != nil {
			return ref.Reason
		}
		return 0
	}
	ref := &Refusal{Owner: "s", Host: "registry.test", Port: 443, Reason: Unlisted}
	var asked, told int
	if why := check(); why != Unlisted {
		t.Errorf("before SetFront: %v, want Unlisted", why)
	}
	p.SetFront(func(context.Context, Question) (Decision, error) { asked++; return AllowOnce, nil },
		func(r *Refusal) { told++ })
	if why := check(); why != 0 || asked != 1 {
		t.Errorf("after SetFront: %v (asked %d times), want allowed once asked", why, asked)
	}
	p.refused(ref)
	p.SetFront(nil, nil)
	p.refused(ref)
	if why := check(); why != Unlisted || asked != 1 || told != 1 {
		t.Errorf("after SetFront(nil, nil): %v (asked %d, told %d times), want Unlisted, asked and told once", why, asked, told)
	}
	if got, want := p.RefusalText(ref), ref.Error(); got != want {
		t.Errorf("RefusalText = %q, want %q", got, want)
	}
}
