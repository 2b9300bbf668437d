//go:build linux

package toolbash_test

import (
	"context"
	"fmt"

	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/session"
	"github.com/dshgo/dsh/toolbash"
	"github.com/dshgo/dsh/tools"
)

// A model's bash call through the registry, as a front end makes it.
func Example() {
	exec, err := local.New(nil)
	if err != nil {
		panic(err)
	}
	defer exec.Close()
	tb := toolbash.New(exec, &toolbash.Options{
		Notify: func(sessionID, notice string) { /* queue for the session's next model request */ },
	})
	defer tb.Close()
	var reg tools.Registry
	if err := tb.Register(&reg); err != nil {
		panic(err)
	}
	res := reg.Execute(context.Background(), &tools.Call{
		Tool:    "bash",
		Args:    []byte(`{"command": "echo hi; exit 2", "description": "Say hi"}`),
		Session: session.Session{ID: "session-1", Cwd: "/"},
	})
	fmt.Println(res.Text())
	fmt.Println("isError:", res.IsError)
	p := reg.PresentCall("bash", []byte(`{"command": "echo hi; exit 2", "description": "Say hi"}`))
	fmt.Printf("card: %q, kind %s\n", p.Title, p.Kind)
	// Output:
	// hi
	// [exit code: 2]
	// isError: false
	// card: "echo hi; exit 2", kind execute
}
