package audit

import (
	"math"
	"time"

	"github.com/dshgo/dsh/observe"
)

// The lines of the log: one JSON object per event, with the fields listed
// here in this order, every field always present (null for an absent
// object, [] for an empty list). docs/operations.md describes each; a
// change here is a change of the documented schema.

// head are the fields of every line.
type head struct {
	// Time is the event's, RFC 3339 in UTC to the millisecond.
	Time string `json:"time"`
	// Event: session_start, session_end, call, network, jail_start,
	// task_end, audit_dropped.
	Event string `json:"event"`
	// Session is the session's audit identity ("" for none).
	Session string `json:"session"`
}

type sessionStartLine struct {
	head
	Front         string   `json:"front"`
	Client        string   `json:"client"`
	ClientVersion string   `json:"client_version"`
	Roots         []string `json:"roots"`
	Containment   string   `json:"containment"`
}

type sessionEndLine struct {
	head
	Front      string  `json:"front"`
	Reason     string  `json:"reason"`
	DurationMS float64 `json:"duration_ms"`
}

type callLine struct {
	head
	Tool         string          `json:"tool"`
	Command      string          `json:"command"`
	Description  string          `json:"description"`
	Task         string          `json:"task"`
	Permission   *permissionLine `json:"permission"`
	Unsandboxed  *questionLine   `json:"unsandboxed"`
	Outcome      string          `json:"outcome"`
	ExitCode     int             `json:"exit_code"`
	Signal       string          `json:"signal"`
	DurationMS   float64         `json:"duration_ms"`
	StdoutBytes  int64           `json:"stdout_bytes"`
	StderrBytes  int64           `json:"stderr_bytes"`
	Spills       []string        `json:"spills"`
	SpilledBytes int64           `json:"spilled_bytes"`
	Limit        string          `json:"limit"`
	Refused      []refusalLine   `json:"refused"`
	RefusedMore  int             `json:"refused_more"`
	Error        string          `json:"error"`
}

type permissionLine struct {
	Verdict string `json:"verdict"`
	Rule    string `json:"rule"`
	Source  string `json:"source"`
	Reason  string `json:"reason"`
	Answer  string `json:"answer"`
}

type questionLine struct {
	Asked  bool   `json:"asked"`
	Answer string `json:"answer"`
}

type refusalLine struct {
	Program string   `json:"program"`
	Argv    []string `json:"argv"`
	Rule    string   `json:"rule"`
}

type networkLine struct {
	head
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Verdict string `json:"verdict"`
	Asked   bool   `json:"asked"`
	Rule    string `json:"rule"`
	Reason  string `json:"reason"`
}

type jailStartLine struct {
	head
	Layer      string  `json:"layer"`
	Pooled     bool    `json:"pooled"`
	DurationMS float64 `json:"duration_ms"`
	Error      string  `json:"error"`
}

type taskEndLine struct {
	head
	Task        string        `json:"task"`
	Outcome     string        `json:"outcome"`
	ExitCode    int           `json:"exit_code"`
	Signal      string        `json:"signal"`
	Limit       string        `json:"limit"`
	Refused     []refusalLine `json:"refused"`
	RefusedMore int           `json:"refused_more"`
	DurationMS  float64       `json:"duration_ms"`
}

// droppedLine says how many events are missing from the log before it,
// and why: "queue full" (the writer fell behind) or "write failed".
type droppedLine struct {
	head
	Dropped int64  `json:"dropped"`
	Reason  string `json:"reason"`
}

// Reasons of a droppedLine.
const (
	reasonQueueFull   = "queue full"
	reasonWriteFailed = "write failed"
)

// line is the line of an event, its secrets scrubbed; nil for a type this
// version does not know.
func line(e observe.Event) any {
	switch e := e.(type) {
	case *observe.SessionStart:
		return &sessionStartLine{head: headOf(e.Time, "session_start", e.Session), Front: e.Front, Client: e.Client,
			ClientVersion: e.ClientVersion, Roots: list(e.Roots), Containment: e.Containment}
	case *observe.SessionEnd:
		return &sessionEndLine{head: headOf(e.Time, "session_end", e.Session), Front: e.Front, Reason: e.Reason, DurationMS: ms(e.Duration)}
	case *observe.Call:
		return callLineOf(e)
	case *observe.Network:
		return &networkLine{head: headOf(e.Time, "network", e.Session), Host: e.Host, Port: e.Port, Verdict: e.Verdict,
			Asked: e.Asked, Rule: e.Rule, Reason: ScrubText(e.Reason)}
	case *observe.JailStart:
		return &jailStartLine{head: headOf(e.Time, "jail_start", e.Session), Layer: e.Layer, Pooled: e.Pooled,
			DurationMS: ms(e.Duration), Error: ScrubText(e.Err)}
	case *observe.TaskEnd:
		return &taskEndLine{head: headOf(e.Time, "task_end", e.Session), Task: e.Task, Outcome: e.Outcome, ExitCode: e.ExitCode,
			Signal: e.Signal, Limit: e.Limit, Refused: refusals(e.Refused), RefusedMore: e.RefusedMore, DurationMS: ms(e.Duration)}
	}
	return nil
}

func callLineOf(e *observe.Call) *callLine {
	l := &callLine{head: headOf(e.Time, "call", e.Session), Tool: e.Tool, Command: ScrubCommand(e.Command),
		Description: ScrubText(e.Description), Task: e.Task, Outcome: e.Outcome, ExitCode: e.ExitCode, Signal: e.Signal,
		DurationMS: ms(e.Duration), StdoutBytes: e.StdoutBytes, StderrBytes: e.StderrBytes, Spills: list(e.Spills),
		SpilledBytes: e.SpilledBytes, Limit: e.Limit, Refused: refusals(e.Refused), RefusedMore: e.RefusedMore, Error: ScrubText(e.Error)}
	if p := e.Permission; p != nil {
		l.Permission = &permissionLine{Verdict: p.Verdict, Rule: ScrubCommand(p.Rule), Source: p.Source,
			Reason: ScrubText(p.Reason), Answer: p.Answer}
	}
	if q := e.Unsandboxed; q != nil {
		l.Unsandboxed = &questionLine{Asked: q.Asked, Answer: q.Answer}
	}
	return l
}

// headOf is the head of a line; an event without a time gets now.
func headOf(t time.Time, event, session string) head {
	if t.IsZero() {
		t = time.Now()
	}
	return head{Time: t.UTC().Format(timeFormat), Event: event, Session: session}
}

// timeFormat is RFC 3339 to the millisecond (UTC: Z).
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

// list is s, never nil (an empty list is [] in the line, not null).
func list(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// refusals are the lines of refused execs, their argv and rule scrubbed.
func refusals(rs []observe.Refusal) []refusalLine {
	out := make([]refusalLine, len(rs))
	for i, r := range rs {
		out[i] = refusalLine{Program: r.Program, Argv: list(ScrubArgv(r.Argv)), Rule: ScrubCommand(r.Rule)}
	}
	return out
}
