// Package bashtest is the conformance suite of package bash: every
// bash.Executor (local, sandboxed, remote) must pass it.
//
// Run checks each rule of the bash package doc in a subtest, with real
// processes: against an executor of the subtest's own where the rule needs
// one (it closes the executor, configures it otherwise, or looks at all its
// tasks), and against one shared by the other subtests of its Config (most
// of them) elsewhere. It takes a NewFunc, which maps the suite's Config
// onto the executor's own options:
//
//	func TestConformance(t *testing.T) {
//		bashtest.Run(t, func(t *testing.T, c bashtest.Config) bash.Executor {
//			e, err := myexec.New(myexec.Options{Cwd: c.Cwd, Grace: c.Grace, ...})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return e
//		})
//	}
//
// What the suite needs of the executor and the machine:
//
//   - The executor's commands see Config.Cwd (a fresh t.TempDir) at the same
//     path, writable, FIFOs included, and so are directories made in it
//     after the executor was: the suite syncs with commands through FIFOs
//     there.
//   - Their processes are visible in this machine's /proc (a sandbox in its
//     own PID namespace is fine): the suite finds them by the marker it puts
//     in Config.Env (and by tags it puts in some commands' environment) to
//     check that a kill, a timeout or Close leaves none alive. It never uses
//     pids the commands print, which a PID namespace would change.
//   - bash, env, head, seq, setsid, sha256sum, sleep, tail, touch and wc
//     are installed where the commands run.
//   - The executor's goroutines are started, directly or through other
//     goroutines, from the goroutine that calls the NewFunc or a method of
//     the executor: the suite's tests run in parallel (with each other and
//     with the caller's other parallel tests), so after Close each
//     executor is checked to leave no goroutine behind by a pprof label
//     that goroutines inherit from the one that starts them. An executor
//     served in the same process (a far side over pipes) is fine when the
//     NewFunc starts it.
//   - The NewFunc may be called from many goroutines at once. It gets the
//     test the executor is for (Run's own t for a shared one), whose
//     t.TempDir and t.Cleanup last as long as the executor.
//
// The suite closes every executor it makes and checks that Close succeeds,
// twice. An executor that documents a limit the bash rules do not allow for
// (a process group cannot hold a process that calls setsid) says so with an
// Option; the suite then skips the checks that limit breaks, by name.
//
// NewExecutor makes one executor as Run does, closed and checked the same
// way, for a suite of a layer above the seam: package
// toolbash/toolbashtest runs the tools' golden transcript over it. This
// package does not depend on the tools.
//
// The suite is for Linux; elsewhere this package is empty.
package bashtest
