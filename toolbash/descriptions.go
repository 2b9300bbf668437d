package toolbash

// The tool descriptions the model reads.

const bashDescription = `Run a shell command with bash and return what it printed.

Every call is a fresh ` + "`bash -c`" + ` process: nothing carries over between calls, not the directory, not variables, not functions. Set the directory with workdir instead of cd (a relative workdir is taken from the session's directory). Stdin is empty, there is no terminal, and interactive programs (editors, pagers, password prompts) will not work: pass flags that make them non-interactive.

The result is stdout, then a [stderr] section when there was any, then status markers on lines of their own:
- [exit code: N] when the command failed with a non-zero status. This is not an error of the tool: read the output and decide what to do.
- [timed out after Nms] when the timeout ran out and the command was stopped; [killed by signal: NAME] when a signal ended it.
- [output truncated; full output: PATH] when the output was long: the end is kept, and PATH holds all of it (read parts of it with head, tail or grep rather than printing it whole).
- [still running in background as task ID] when the command left processes running (such as "server &"): they were moved to a background task.

For anything that runs long or does not end by itself (servers, watchers, long builds and test suites), set run_in_background: the call returns a task id at once and no timeout applies. Then read its output with bash_output and stop it with bash_kill. When a background task finishes you get a notice with your next request, but nothing wakes you up by itself: poll with bash_output when you need the result.`

const bashOutputDescription = `Read what a background task started with bash (run_in_background) has printed since the previous bash_output call for that task, and its status.

The result is the new output (stdout, then a [stderr] section), or "(no new output)", then a status line: [status: running], [status: completed, exit code: N], or [status: killed]. If the task printed more than could be kept in memory between two reads, a line says so and names the files that hold the complete output. Poll again while the status is running; output is never returned twice.`

const bashKillDescription = `Stop a background task started with bash (run_in_background), with every process it started: SIGTERM first, then SIGKILL if it does not stop. Killing a task that has already finished does nothing and says so. Output printed before it stopped can still be read with bash_output.`
