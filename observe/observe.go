// Package observe is what the server tells its operators about the work
// it does: a closed set of events (sessions, tool calls, jail starts,
// network decisions) that front ends and executors emit, and that the
// Prometheus metrics count and the audit log records.
//
// A producer holds a Sink (nil: nobody listens) and calls it as things
// happen. A tool call's event is filled by several layers on its way: the
// front end puts a *Call in the call's context with WithCall, the
// permission gate, the tool and the executor's result fill their fields
// through CallFrom, and the front end emits it when the call returns.
//
// Events carry no command output, ever; commands and descriptions are as
// the model wrote them, and a sink that writes them out scrubs secrets
// first (see the audit log).
package observe

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// A Sink receives events. It is called on the path of the work it
// describes (a call's, a session's), so it must not block: a sink that
// writes files or sockets hands events to a goroutine of its own and
// drops, counting, what it cannot keep up with. A nil Sink discards.
type Sink func(Event)

// Emit calls s with e, if s is set.
func (s Sink) Emit(e Event) {
	if s != nil {
		s(e)
	}
}

// Tee is a Sink that gives each event to every one of sinks, in order;
// nil sinks are skipped. Nil when none is set.
func Tee(sinks ...Sink) Sink {
	var set []Sink
	for _, s := range sinks {
		if s != nil {
			set = append(set, s)
		}
	}
	switch len(set) {
	case 0:
		return nil
	case 1:
		return set[0]
	}
	return func(e Event) {
		for _, s := range set {
			s(e)
		}
	}
}

// Event is one of the types of this package: *SessionStart, *SessionEnd,
// *Call, *Network, *JailStart, *TaskEnd.
type Event interface{ event() }

// SessionStart: a client session began.
type SessionStart struct {
	Time time.Time
	// Session is the session's audit identity: a stable, non-secret
	// name of its owner token (never the token itself), the same in
	// every event of the session.
	Session string
	// Front is the front end: "mcp-stdio", "mcp-http", "acp".
	Front string
	// Client and ClientVersion are what the client said it is.
	Client, ClientVersion string
	// Roots are the client's roots (paths), as far as known at start.
	Roots []string
	// Containment says where the session's commands run and fenced how:
	// "sandbox (jail)", "sandbox (landlock layer)", "none", "pods in
	// namespace NS", "remote HOST (sandbox)" (see setup.Containment).
	Containment string
}

// SessionEnd: a client session ended, and its tasks with it.
type SessionEnd struct {
	Time    time.Time
	Session string
	Front   string // as the SessionStart's
	// Reason: "closed" (the client ended it), "idle" (its client was
	// gone for the grace period), "shutdown" (the server stopped).
	Reason   string
	Duration time.Duration
}

// Call is one tool call, from the front end's receipt to its result.
type Call struct {
	Time    time.Time // when the call arrived
	Session string
	Tool    string // "bash", "bash_output", …
	// Command and Description are the bash call's (empty for other
	// tools); Task is the task a task tool named, or the background task
	// a bash call started or adopted.
	Command, Description, Task string
	// Permission is the rules' verdict on a bash call (nil: no rules, or
	// not a bash call).
	Permission *Permission
	// Unsandboxed is the question put to the user for a call that asked
	// to run outside the sandbox (nil: it did not ask).
	Unsandboxed *Question
	// Outcome is how the call ended: "ok" (exit 0, or a task tool that
	// did its work), "exit" (a non-zero exit code), "signal", "timeout",
	// "aborted", "limit" (a resource limit killed it), "denied" (the
	// rules or the user refused it), "invalid" (bad arguments), "error"
	// (any other error result).
	Outcome string
	// ExitCode and Signal are the shell's, for a command that ran
	// (ExitCode -1 with a signal).
	ExitCode int
	Signal   string
	Duration time.Duration
	// StdoutBytes and StderrBytes are the sizes of the streams the
	// command wrote (all of each, spilled or not); Spills are the paths
	// of the spill files kept of them.
	StdoutBytes, StderrBytes int64
	Spills                   []string
	// SpilledBytes are the bytes of the streams kept in those files.
	SpilledBytes int64
	// Limit names the resource limit that ended the command ("memory
	// limit 2 GiB"), empty when none did.
	Limit string
	// Refused are the programs refused at exec by a deny rule, and
	// RefusedMore how many more were.
	Refused     []Refusal
	RefusedMore int
	// Error is the error result's first line, for an outcome "error" or
	// "invalid".
	Error string
}

// The outcomes of a Call (and a TaskEnd).
const (
	OutcomeOK      = "ok"
	OutcomeExit    = "exit"
	OutcomeSignal  = "signal"
	OutcomeTimeout = "timeout"
	OutcomeAborted = "aborted"
	OutcomeLimit   = "limit"
	OutcomeDenied  = "denied"
	OutcomeInvalid = "invalid"
	OutcomeError   = "error"
)

// Fail sets the call's Outcome, and its Error to the first line of text
// (at most 200 characters), unless a layer closer to the work set an
// outcome already. A nil c (a call nobody observes) is left alone.
func (c *Call) Fail(outcome, text string) {
	if c == nil || c.Outcome != "" {
		return
	}
	c.Outcome, c.Error = outcome, FirstLine(text)
}

// FirstLine is the first line of s, cut at 200 characters.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if utf8.RuneCountInString(s) > 200 {
		s = string([]rune(s)[:199]) + "…"
	}
	return s
}

// Permission is the permission rules' verdict on a call.
type Permission struct {
	// Verdict is "allow", "deny" or "ask".
	Verdict string
	// Rule is the pattern of the rule that decided, and Source where it
	// was written (a file, "allowed by the user in this session"); both
	// empty for a verdict of the built-in read-only list or the mode.
	Rule, Source string
	// Reason is the verdict's own words, which name the rule when one
	// decided.
	Reason string
	// Answer is the user's answer to an "ask": "allowed once",
	// "allowed for the session", "denied", "unanswered", "cannot ask";
	// empty for another verdict.
	Answer string
}

// Question is a question put to the user, and the answer.
type Question struct {
	Asked  bool
	Answer string // "allowed", "denied", "unanswered", "cannot ask"
}

// Refusal is a program refused at its exec.
type Refusal struct {
	Program string
	Argv    []string
	Rule    string
}

// Network is a decision of the network allowlist on a connection of a
// session's command.
type Network struct {
	Time    time.Time
	Session string
	// Host and Port are where the command tried to connect.
	Host string
	Port int
	// Verdict is "allow" or "deny"; Asked says the user was asked and
	// answered (not where nobody could be asked, or answered in time),
	// Rule is the allowlist entry that decided (empty when the user or a
	// default did), Reason the refusal's words.
	Verdict      string
	Asked        bool
	Rule, Reason string
}

// JailStart is a sandbox jail (or Landlock-layer agent) started, for a
// session or for the warm pool.
type JailStart struct {
	Time time.Time
	// Session is empty for a jail started into the warm pool.
	Session string
	Layer   string // "jail", "landlock layer"
	// Pooled says the session's jail came from the warm pool (Duration
	// is then the claim's).
	Pooled   bool
	Duration time.Duration
	Err      string // empty when it started
}

// TaskEnd is a background task that ended.
type TaskEnd struct {
	Time    time.Time
	Session string
	Task    string
	// Outcome, ExitCode, Signal, Limit, Refused are as a Call's.
	Outcome     string
	ExitCode    int
	Signal      string
	Limit       string
	Refused     []Refusal
	RefusedMore int
	Duration    time.Duration
}

func (*SessionStart) event() {}
func (*SessionEnd) event()   {}
func (*Call) event()         {}
func (*Network) event()      {}
func (*JailStart) event()    {}
func (*TaskEnd) event()      {}

type callKey struct{}

// WithCall returns ctx carrying c, for the layers below a front end to
// fill (see CallFrom).
func WithCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom is the *Call that ctx carries, or nil when nobody observes
// the call. Callers fill it with no lock: a call's layers run one after
// another on the call's goroutine.
func CallFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}
