package metrics

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dshgo/dsh/observe"
)

// The values each label takes; anything else counts as other.
var (
	fronts    = []string{"mcp-stdio", "mcp-http", "acp"}
	reasons   = []string{"closed", "idle", "shutdown"}
	outcomes  = []string{observe.OutcomeOK, observe.OutcomeExit, observe.OutcomeSignal, observe.OutcomeTimeout, observe.OutcomeAborted, observe.OutcomeLimit, observe.OutcomeDenied, observe.OutcomeInvalid, observe.OutcomeError}
	layers    = []string{"jail", "landlock"}
	kinds     = []string{"fresh", "pooled", "refill"}
	limits    = []string{"memory", "pids", "cpu", "tmp"}
	verdicts  = []string{"allow", "deny"}
	rules     = []string{"allow", "deny", "ask"}
	answers   = []string{"none", "allowed once", "allowed for the session", "denied", "unanswered", "cannot ask"}
	questions = []string{"allowed", "denied", "unanswered", "cannot ask"}
)

const other = "other"

// label is v if it is one of allowed, else "other".
func label(v string, allowed []string) string {
	if slices.Contains(allowed, v) {
		return v
	}
	return other
}

// Sink is the sink that counts events; it never blocks.
func (m *Metrics) Sink() observe.Sink {
	return func(e observe.Event) {
		switch e := e.(type) {
		case *observe.SessionStart:
			front := label(e.Front, fronts)
			m.sessionsStarted.WithLabelValues(front).Inc()
			m.sessionsOpen.WithLabelValues(front).Inc()
		case *observe.SessionEnd:
			front := label(e.Front, fronts)
			m.sessionsEnded.WithLabelValues(front, label(e.Reason, reasons)).Inc()
			m.sessionsOpen.WithLabelValues(front).Dec()
		case *observe.Call:
			m.call(e)
		case *observe.TaskEnd:
			m.running.Add(-1)
			m.tasksEnded.WithLabelValues(label(e.Outcome, outcomes)).Inc()
			m.limitKill(e.Limit)
		case *observe.Network:
			m.network.WithLabelValues(label(e.Verdict, verdicts), strconv.FormatBool(e.Asked)).Inc()
		case *observe.JailStart:
			m.jailStart(e)
		}
	}
}

// call counts a tool call.
func (m *Metrics) call(c *observe.Call) {
	tool := label(c.Tool, m.tools)
	m.calls.WithLabelValues(tool, label(c.Outcome, outcomes)).Inc()
	m.callSeconds.WithLabelValues(tool).Observe(c.Duration.Seconds())
	if c.Task != "" && c.Tool == "bash" {
		m.tasksStarted.Inc()
		m.running.Add(1)
	}
	if p := c.Permission; p != nil {
		answer := p.Answer
		if answer == "" {
			answer = "none"
		}
		m.permissions.WithLabelValues(label(p.Verdict, rules), label(answer, answers)).Inc()
	}
	if q := c.Unsandboxed; q != nil {
		m.unsandboxed.WithLabelValues(label(q.Answer, questions)).Inc()
	}
	m.limitKill(c.Limit)
	m.spilled.Add(float64(max(c.SpilledBytes, 0)))
	m.refused.Add(float64(len(c.Refused) + max(c.RefusedMore, 0)))
}

// limitKill counts a command a limit ended ("" for none).
func (m *Metrics) limitKill(limit string) {
	if limit != "" {
		m.limitKills.WithLabelValues(LimitKind(limit)).Inc()
	}
}

// LimitKind is the label of a limit, as a result names it ("memory limit
// 2 GiB" is memory): its first word, if it is a known one, else other.
func LimitKind(limit string) string {
	word, _, _ := strings.Cut(strings.TrimSpace(limit), " ")
	return label(strings.ToLower(word), limits)
}

// jailStart counts a jail's start.
func (m *Metrics) jailStart(j *observe.JailStart) {
	layer, _, _ := strings.Cut(j.Layer, " ") // "landlock layer" is landlock
	kind := "fresh"
	switch {
	case j.Pooled:
		kind = "pooled"
	case j.Session == "":
		kind = "refill"
	}
	result := "ok"
	if j.Err != "" {
		result = "error"
	}
	layer = label(layer, layers)
	m.jailStarts.WithLabelValues(layer, kind, result).Inc()
	if result == "ok" {
		m.jailSeconds.WithLabelValues(layer, kind).Observe(j.Duration.Seconds())
	}
}

// zero makes the series of the known label values, at zero, so that
// they are there before the first event (a rate over a series that
// appears late misses its first increase).
func (m *Metrics) zero() {
	for _, f := range fronts {
		m.sessionsStarted.WithLabelValues(f)
		m.sessionsOpen.WithLabelValues(f)
		for _, r := range reasons {
			m.sessionsEnded.WithLabelValues(f, r)
		}
	}
	for _, t := range m.tools {
		m.callSeconds.WithLabelValues(t)
		for _, o := range outcomes {
			m.calls.WithLabelValues(t, o)
		}
	}
	for _, o := range outcomes {
		m.tasksEnded.WithLabelValues(o)
	}
	for _, l := range limits {
		m.limitKills.WithLabelValues(l)
	}
	for _, v := range verdicts {
		m.network.WithLabelValues(v, "false")
		m.network.WithLabelValues(v, "true")
	}
	for _, v := range rules {
		m.permissions.WithLabelValues(v, "none")
	}
	for _, a := range answers[1:] {
		m.permissions.WithLabelValues("ask", a)
	}
	for _, a := range questions {
		m.unsandboxed.WithLabelValues(a)
	}
}
