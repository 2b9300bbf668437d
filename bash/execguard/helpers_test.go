//go:build linux

package execguard_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// helperEnv makes the test binary a helper program: its value names the
// helper; the arguments follow on the command line.
const helperEnv = "EXECGUARD_TEST_HELPER"

// helperCmd is the shell words that start the test binary as a helper
// whose name is the first argument.
func helperCmd() string {
	self, _ := os.Executable()
	return "env " + helperEnv + "=1 " + self
}

func runHelper(string) {
	args := os.Args[1:]
	if len(args) == 0 {
		fail("no helper named")
	}
	switch args[0] {
	case "spawn": // os/exec: clone(CLONE_VFORK|CLONE_VM), then execve
		cmd := exec.Command(args[1], args[2:]...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		_ = cmd.Run()
		os.Exit(0)
	case "threadexec": // execve from a thread that is not the leader
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			path, err := exec.LookPath(args[1])
			if err == nil {
				err = syscall.Exec(path, args[1:], os.Environ())
			}
			fail(err.Error())
			close(done)
		}()
		<-done
	case "raceexec":
		raceExec(args[1], args[2], args[3])
	}
	fail("unknown helper " + args[0])
}

// raceExec execs path with one argument that another thread keeps
// rewriting between allowed and denied (the same length), so that the
// kernel copies whichever it finds. The writer and the exec have a P
// each, also on a machine of one CPU (where the kernel then runs them
// in turns): with one P, each of the exec's yields to the writer below
// waited for the writer's preemption, some 10 ms.
func raceExec(path, allowed, denied string) {
	runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))
	if len(allowed) != len(denied) {
		// pad: the race needs both in one buffer of one length
		for len(allowed) < len(denied) {
			allowed += "_"
		}
		for len(denied) < len(allowed) {
			denied += "_"
		}
	}
	buf := make([]byte, len(allowed)+1)
	copy(buf, allowed)
	var stop atomic.Bool
	go func() {
		runtime.LockOSThread()
		a, d := []byte(allowed), []byte(denied)
		for i := 0; !stop.Load(); i++ {
			if i%2 == 0 {
				copy(buf, d)
			} else {
				copy(buf, a)
			}
		}
	}()
	p, _ := unix.BytePtrFromString(path)
	argv := []*byte{p, &buf[0], nil}
	envv := []*byte{nil}
	for i := 0; i < 1000; i++ { // let the writer run first
		runtime.Gosched()
	}
	_, _, e := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	stop.Store(true)
	fail(e.Error())
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "helper:", msg)
	os.Exit(2)
}
