package observe

import (
	"context"
	"strings"
	"testing"
)

func TestTee(t *testing.T) {
	var got []string
	a := Sink(func(Event) { got = append(got, "a") })
	b := Sink(func(Event) { got = append(got, "b") })
	if Tee() != nil || Tee(nil, nil) != nil {
		t.Error("Tee of no sink is not nil")
	}
	Tee(a, nil, b).Emit(&Call{})
	Sink(nil).Emit(&Call{}) // a nil sink discards
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("Tee(a, nil, b) called %q, want [a b]", got)
	}
}

func TestCallFrom(t *testing.T) {
	if CallFrom(context.Background()) != nil {
		t.Error("a bare context carries a call")
	}
	c := &Call{Tool: "bash"}
	if CallFrom(WithCall(context.Background(), c)) != c {
		t.Error("CallFrom does not give the call WithCall put")
	}
}

// TestSessionName: a token's name is stable in the process, differs
// between tokens, and neither holds nor is the token.
func TestSessionName(t *testing.T) {
	a, b := "mcp-0123456789abcdef0123456789abcdef", "mcp-fedcba9876543210fedcba9876543210"
	if SessionName("") != "" {
		t.Error("no owner has a name")
	}
	na, nb := SessionName(a), SessionName(b)
	if na != SessionName(a) || na == nb || len(na) != 14 || !strings.HasPrefix(na, "s-") {
		t.Errorf("names %q, %q; want stable, distinct, s- and 12 hex digits", na, nb)
	}
	if strings.Contains(a, na[2:]) || strings.Contains(na, a[4:10]) {
		t.Errorf("the name %q shows its token %q", na, a)
	}
}

// TestFail: the first layer to set an outcome wins, and the error is
// the text's first line, cut; an unobserved call is left alone.
func TestFail(t *testing.T) {
	c := &Call{}
	c.Fail(OutcomeDenied, "permission denied: rm\nmore words")
	c.Fail(OutcomeError, "later")
	if c.Outcome != OutcomeDenied || c.Error != "permission denied: rm" {
		t.Errorf("%+v", c)
	}
	(*Call)(nil).Fail(OutcomeError, "nobody observes")
	if got := FirstLine(strings.Repeat("é", 300)); got != strings.Repeat("é", 199)+"…" {
		t.Errorf("a long line: %q", got)
	}
}
