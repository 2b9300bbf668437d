//go:build linux

package local_test

import (
	"context"
	"fmt"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
)

func ExampleExecutor_Run() {
	e, err := local.New(nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()
	spec, err := e.Resolve(context.Background(), bash.ExecRequest{Command: "echo hello; echo oops >&2; exit 3", Workdir: "/"})
	if err != nil {
		panic(err)
	}
	res, err := e.Run(context.Background(), spec)
	if err != nil { // only infrastructure failures are errors
		panic(err)
	}
	fmt.Printf("stdout %q stderr %q exit %d\n", res.Stdout.Text, res.Stderr.Text, res.ExitCode)
	// Output: stdout "hello\n" stderr "oops\n" exit 3
}

func ExampleExecutor_Start() {
	e, err := local.New(nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()
	done := make(chan bash.Task, 1)
	defer e.OnTaskDone(func(t bash.Task) { done <- t })()
	spec, _ := e.Resolve(context.Background(), bash.ExecRequest{Command: "echo building; exit 1", Owner: "session-1"})
	task, err := e.Start(context.Background(), spec)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.ID, task.Status)
	<-done
	r, _ := e.ReadOutput(context.Background(), task.ID)
	fmt.Printf("%q %s %d\n", r.Stdout.Text, r.Task.Status, r.Task.ExitCode)
	// Output:
	// bash-1 running
	// "building\n" completed 1
}
