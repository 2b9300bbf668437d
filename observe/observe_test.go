package observe

import (
	"context"
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
