package toolbash

// The tool descriptions the model reads.

const bashDescription = `Run a shell command with bash and return what it printed.

Every call is a fresh ` + "`bash -c`" + ` process: nothing carries over between calls, not the directory, not variables, not functions. Set the directory with workdir instead of cd (a relative workdir is taken from the session's directory). A foreground call never gets input: its stdin is empty and there is no terminal, so pass flags that make programs non-interactive (editors, pagers and password prompts will not work). For a program that asks questions (a scaffolder, a prompt you must answer) or a REPL you want to use across several steps, set input: true: it starts in the background with its stdin open (a pipe, not a terminal), the result holds what it printed until it first waited for input (its banner and prompt), and you write to it with bash_input. Start a REPL in its interactive, unbuffered mode, or it waits for the end of its input and answers nothing: python3 -u -i -q, node -i, sqlite3 -interactive. Set tty: true instead for a program that needs a terminal (it then behaves as in a terminal: python3 -q works there).

The result is stdout, then a [stderr] section when there was any, then status markers on lines of their own:
- [exit code: N] when the command failed with a non-zero status. This is not an error of the tool: read the output and decide what to do.
- [timed out after Nms] when the timeout ran out and the command was stopped; [killed by signal: NAME] when a signal ended it.
- [output truncated; full output: PATH] when the output was long: the end is kept, and PATH holds all of it (read parts of it with head, tail or grep rather than printing it whole).
- [still running in background as task ID] when the command left processes running (such as "server &"): they were moved to a background task.

For anything that runs long or does not end by itself (servers, watchers, long builds and test suites), set run_in_background: the call returns a task id at once and no timeout applies. Then read its output with bash_output and stop it with bash_kill. When a background task finishes you get a notice with your next request, but nothing wakes you up by itself: poll with bash_output when you need the result.`

const bashOutputDescription = `Read what a background task started with bash (run_in_background) has printed since the previous bash_output call for that task, and its status.

The result is the new output (stdout, then a [stderr] section), or "(no new output)", then a status line: [status: running], [status: running, waiting for input] (it waits for you to write to it with bash_input), [status: completed, exit code: N], or [status: killed]. If the task printed more than could be kept in memory between two reads, a line says so and names the files that hold the complete output. Poll again while the status is running; output is never returned twice.`

const bashKillDescription = `Stop a background task started with bash (run_in_background), with every process it started: SIGTERM first, then SIGKILL if it does not stop. Killing a task that has already finished does nothing and says so. Output printed before it stopped can still be read with bash_output.`

const bashInputDescription = `Write to the standard input of a background task started with bash input: true, then return what it printed in response, and its status, as bash_output does.

input is sent exactly as given: end a line with \n to send it (a program that reads lines waits for it). The call returns as soon as the program waits for input again with its answer printed ([status: running, waiting for input]), or, for a program that cannot be seen waiting, once it printed nothing more for a moment; when wait_ms has passed (default 2000, at most 30000: a program still working is [status: running]), or when the task ends. Output that comes later is read with bash_output. An empty input only reads (what the task printed since your last read, or its next output). Set eof to close the input after this text (a REPL then exits); stop a task with bash_kill. Without tty the input is a pipe: programs see no terminal, so start a REPL in its interactive mode and unbuffered (python3 -u -i -q, node -i) or it waits for the end of its input, and its answers for a full buffer. With tty it is a terminal: the echo of what you type is left out of the answer, control characters work as keys (\u0003 Ctrl-C interrupts, \u0004 Ctrl-D ends input, \u001b[A is the up arrow, \r is Enter), eof types Ctrl-D, and the output reads as plain text (colours and cursor movement removed); a terminal keeps at most 4095 bytes of a line being typed, so pass long text through a file.`

const bashTasksDescription = `List this session's background tasks: for each its id, status, when it started, whether its input is open for bash_input, and its command. Tasks of other sessions are not listed.`
