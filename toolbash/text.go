package toolbash

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/permission"
)

// The exact model-facing texts. Every function here is pure.

const (
	noOutput    = "(no output)"
	noNewOutput = "(no new output)"
	unavailable = "(unavailable)"
)

// runText is the bash tool's text for a finished foreground run: stdout
// (with its truncation note), a [stderr] section, "(no output)" when both
// are empty, then the status markers, each on a line of its own. The
// streams are cut to fit maxChars characters in all (see budget.go); zero
// or less means no budget.
func runText(r bash.RunResult, maxChars int) string {
	return budgeted(r, maxChars, func(r *bash.RunResult) (*bash.Output, *bash.Output) { return &r.Stdout, &r.Stderr }, runTextWhole)
}

func runTextWhole(r bash.RunResult) string {
	var b strings.Builder
	streams(&b, r.Stdout, r.Stderr, truncationNote)
	if b.Len() == 0 {
		b.WriteString(noOutput)
	}
	if r.Note != "" {
		line(&b, "[sandbox: "+r.Note+"]")
	}
	refusedLines(&b, r.Refused, r.RefusedMore)
	if r.TimedOut {
		line(&b, fmt.Sprintf("[timed out after %dms]", r.Timeout.Milliseconds()))
	}
	if r.Limit != "" {
		line(&b, "[killed: "+r.Limit+" reached]")
	}
	switch {
	case r.Limit != "" && r.Signal == "SIGKILL": // the limit's kill
	case r.Signal != "":
		line(&b, "[killed by signal: "+r.Signal+"]")
	case r.ExitCode != 0:
		line(&b, fmt.Sprintf("[exit code: %d]", r.ExitCode))
	}
	switch {
	case r.Adopted != "":
		line(&b, "[still running in background as task "+string(r.Adopted)+"]")
	case r.LeftoversOutside:
		line(&b, leftoversOutside)
	case r.LeftoversKilled:
		line(&b, leftoversKilled)
	}
	return b.String()
}

// leftoversKilled tells the model that processes its command left running
// were stopped because its session was at the background task limit.
const leftoversKilled = "[processes left running were stopped: too many background tasks]"

// leftoversOutside tells the model that processes a command run outside
// the sandbox left running were stopped: the user's yes covered the
// command, not what would run on after it.
const leftoversOutside = "[processes left running were stopped: a call outside the sandbox ends with its command]"

// refusedLines writes one line per program a deny rule refused at its
// exec, and one for those beyond.
func refusedLines(b *strings.Builder, refused []bash.Refusal, more int) {
	for _, r := range refused {
		line(b, refusedText(r))
	}
	switch {
	case more == 1:
		line(b, "[1 more program refused by deny rules]")
	case more > 1:
		line(b, fmt.Sprintf("[%d more programs refused by deny rules]", more))
	}
}

// refusedText says which program a deny rule refused, and that it did not
// run: the command went on without it.
func refusedText(r bash.Refusal) string {
	words := make([]string, len(r.Argv))
	for i, w := range r.Argv {
		words[i] = permission.QuoteWord(w)
	}
	argv := strings.Join(words, " ")
	if n := utf8.RuneCountInString(argv); n > maxRefusedArgv {
		argv = string([]rune(argv)[:maxRefusedArgv]) + "…"
	}
	return fmt.Sprintf("[refused by deny rule %s: %s (%s) was not run]",
		quoted(r.Rule), quoted(argv), permission.QuoteWord(r.Program))
}

// maxRefusedArgv bounds the argv a refusal line shows, in characters.
const maxRefusedArgv = 200

func quoted(s string) string { return "`" + s + "`" }

// streams writes stdout, then a [stderr] section when stderr has anything;
// note, if not nil, follows a stream whose Output was truncated.
func streams(b *strings.Builder, stdout, stderr bash.Output, note func(bash.Output) string) {
	b.WriteString(stdout.Text)
	if note != nil && stdout.Truncated {
		line(b, note(stdout))
	}
	if stderr.Text == "" && !(note != nil && stderr.Truncated) {
		return
	}
	if b.Len() > 0 {
		newline(b)
	}
	b.WriteString("[stderr]\n")
	b.WriteString(stderr.Text)
	if note != nil && stderr.Truncated {
		line(b, note(stderr))
	}
}

func truncationNote(o bash.Output) string {
	return "[output truncated; full output: " + pathOr(o.SpillPath) + "]"
}

func pathOr(p string) string {
	if p == "" {
		return unavailable
	}
	return p
}

// newline ends the text so far with a newline, unless it does already.
func newline(b *strings.Builder) {
	if s := b.String(); s != "" && !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
}

// line adds s on a line of its own.
func line(b *strings.Builder, s string) {
	newline(b)
	b.WriteString(s)
}

// startText is the bash tool's text for a background start.
func startText(t bash.Task) string {
	switch {
	case t.Terminal:
		return "started background task " + string(t.ID) + " in a terminal; write to it with bash_input"
	case t.Input:
		return "started background task " + string(t.ID) + "; its input is open: write to it with bash_input"
	}
	return "started background task " + string(t.ID)
}

// readText is bash_output's text: the new output (stdout, then a [stderr]
// section) or "(no new output)", the lossy note when output was dropped
// before it was read (or cut to fit), and the status line. The streams are
// cut to fit maxChars characters in all (see budget.go); zero or less means
// no budget.
func readText(r bash.TaskRead, maxChars int) string {
	return budgeted(r, maxChars, func(r *bash.TaskRead) (*bash.Output, *bash.Output) { return &r.Stdout, &r.Stderr }, readTextWhole)
}

func readTextWhole(r bash.TaskRead) string {
	var b strings.Builder
	streams(&b, r.Stdout, r.Stderr, nil)
	if b.Len() == 0 {
		b.WriteString(noNewOutput)
	}
	if r.Lossy() {
		var paths []string
		for _, o := range []bash.Output{r.Stdout, r.Stderr} {
			if o.Truncated && o.SpillPath != "" {
				paths = append(paths, o.SpillPath)
			}
		}
		if len(paths) == 0 {
			paths = []string{unavailable}
		}
		line(&b, "[some output was dropped from memory; full output: "+strings.Join(paths, ", ")+"]")
	}
	refusedLines(&b, r.Refused, r.RefusedMore)
	line(&b, statusLine(r.Task))
	return b.String()
}

// statusLine is a task's status marker.
func statusLine(t bash.Task) string {
	switch t.Status {
	case bash.StatusRunning:
		if t.WaitingInput {
			return "[status: running, waiting for input]"
		}
		return "[status: running]"
	case bash.StatusCompleted:
		if t.Limit != "" {
			return fmt.Sprintf("[status: completed, exit code: %d, after the %s killed a process]", t.ExitCode, t.Limit)
		}
		return fmt.Sprintf("[status: completed, exit code: %d]", t.ExitCode)
	case bash.StatusKilled:
		if t.Limit != "" {
			return "[status: killed: " + t.Limit + " reached]"
		}
		if t.Signal != "" {
			return "[status: killed by " + t.Signal + "]"
		}
		return "[status: killed]"
	case bash.StatusFailed:
		return "[status: failed to start: " + errorText(t.Err) + "]"
	}
	return "[status: " + string(t.Status) + "]"
}

// killText is bash_kill's text.
func killText(id bash.TaskID, killed bool) string {
	if killed {
		return "killed background task " + string(id)
	}
	return "task " + string(id) + " had already finished"
}

// noticeText is the notice a task's owner receives when the task ends.
func noticeText(t bash.Task) string {
	return "background task " + string(t.ID) + " finished " + statusLine(t) + "; read its output with bash_output"
}

// waitingNoticeText is the notice of a background task that started
// waiting for input.
func waitingNoticeText(t bash.Task) string {
	return "background task " + string(t.ID) + " is waiting for input; read its prompt with bash_output, answer with bash_input"
}

// foreignTaskText is the error for a task owned by another session.
func foreignTaskText(id bash.TaskID) string {
	return "task " + string(id) + " belongs to another session"
}
