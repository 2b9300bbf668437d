package metrics

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/dshgo/dsh/internal/promtooltest"
	"github.com/dshgo/dsh/observe"
)

// value is the value of the series name{labels} (a counter's, a gauge's,
// or a histogram's count), and whether there is one.
func value(t *testing.T, m *Metrics, name string, labels ...string) (float64, bool) {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if hasLabels(s, labels) {
				return sampleValue(s), true
			}
		}
	}
	return 0, false
}

func hasLabels(s *dto.Metric, labels []string) bool {
	var have []string
	for _, l := range s.GetLabel() {
		have = append(have, l.GetName(), l.GetValue())
	}
	return slices.Equal(have, labels)
}

func sampleValue(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.Counter.GetValue()
	case s.Gauge != nil:
		return s.Gauge.GetValue()
	case s.Histogram != nil:
		return float64(s.Histogram.GetSampleCount())
	}
	return -1
}

// TestEvents: each event moves the metrics it stands for, and only with
// labels from their fixed sets: what an event says beyond them (a tool a
// model made up, a limit no one knows) counts as other.
func TestEvents(t *testing.T) {
	m := New(&Options{NoRuntime: true})
	sink := m.Sink()
	for _, tc := range []struct {
		name   string
		events []observe.Event
		want   map[string]float64 // "name label value ..." -> value
	}{
		{"a session starts", []observe.Event{&observe.SessionStart{Session: "s-1", Front: "mcp-http"}}, map[string]float64{
			"dsh_bash_sessions_started_total front mcp-http": 1, "dsh_bash_sessions_open front mcp-http": 1}},
		{"and ends, idle", []observe.Event{&observe.SessionEnd{Session: "s-1", Front: "mcp-http", Reason: "idle"}}, map[string]float64{
			"dsh_bash_sessions_ended_total front mcp-http reason idle": 1, "dsh_bash_sessions_open front mcp-http": 0}},
		{"an odd front and reason", []observe.Event{&observe.SessionStart{Front: "telnet"}, &observe.SessionEnd{Front: "telnet", Reason: "bored"}}, map[string]float64{
			"dsh_bash_sessions_started_total front other": 1, "dsh_bash_sessions_ended_total front other reason other": 1}},
		{"a call", []observe.Event{&observe.Call{Tool: "bash", Outcome: "exit", Duration: 3 * time.Millisecond, StdoutBytes: 5}}, map[string]float64{
			"dsh_bash_calls_total outcome exit tool bash": 1, "dsh_bash_call_duration_seconds tool bash": 1}},
		{"a tool a model made up", []observe.Event{&observe.Call{Tool: "rm_everything", Outcome: "invalid"}}, map[string]float64{
			"dsh_bash_calls_total outcome invalid tool other": 1}},
		{"a background start, then its end by a limit", []observe.Event{
			&observe.Call{Tool: "bash", Task: "bash-1", Outcome: "ok"},
			&observe.Call{Tool: "bash_output", Task: "bash-1", Outcome: "ok"}, // names it: starts nothing
		}, map[string]float64{"dsh_bash_tasks_started_total": 1, "dsh_bash_tasks_running": 1}},
		{"its end", []observe.Event{&observe.TaskEnd{Task: "bash-1", Outcome: "limit", Limit: "memory limit 2 GiB"}}, map[string]float64{
			"dsh_bash_tasks_running": 0, "dsh_bash_tasks_ended_total outcome limit": 1, "dsh_bash_limit_kills_total limit memory": 1}},
		{"a foreground limit, unknown", []observe.Event{&observe.Call{Tool: "bash", Outcome: "limit", Limit: "wombat limit 3"}}, map[string]float64{
			"dsh_bash_limit_kills_total limit other": 1}},
		{"permissions", []observe.Event{
			&observe.Call{Tool: "bash", Outcome: "ok", Permission: &observe.Permission{Verdict: "allow"}},
			&observe.Call{Tool: "bash", Outcome: "denied", Permission: &observe.Permission{Verdict: "ask", Answer: "denied"}},
			&observe.Call{Tool: "bash", Outcome: "ok", Unsandboxed: &observe.Question{Asked: true, Answer: "allowed"}},
		}, map[string]float64{"dsh_bash_permission_verdicts_total answer none verdict allow": 1,
			"dsh_bash_permission_verdicts_total answer denied verdict ask": 1, "dsh_bash_unsandboxed_questions_total answer allowed": 1}},
		{"spills and refusals", []observe.Event{&observe.Call{Tool: "bash", Outcome: "exit", SpilledBytes: 4096,
			Refused: []observe.Refusal{{Program: "/bin/zap"}}, RefusedMore: 2}}, map[string]float64{
			"dsh_bash_spilled_bytes_total": 4096, "dsh_bash_refused_execs_total": 3}},
		{"network", []observe.Event{&observe.Network{Host: "example.com", Verdict: "deny", Asked: true},
			&observe.Network{Host: "proxy.golang.org", Verdict: "allow"}}, map[string]float64{
			"dsh_bash_network_decisions_total asked true verdict deny": 1, "dsh_bash_network_decisions_total asked false verdict allow": 1}},
		{"jails", []observe.Event{
			&observe.JailStart{Session: "s-1", Layer: "jail", Duration: 30 * time.Millisecond},
			&observe.JailStart{Layer: "landlock layer", Duration: 5 * time.Millisecond},
			&observe.JailStart{Session: "s-2", Layer: "jail", Pooled: true, Duration: time.Millisecond},
			&observe.JailStart{Session: "s-3", Layer: "jail", Err: "bwrap: no user namespaces"},
		}, map[string]float64{
			"dsh_bash_jail_starts_total kind fresh layer jail result ok": 1, "dsh_bash_jail_starts_total kind refill layer landlock result ok": 1,
			"dsh_bash_jail_starts_total kind pooled layer jail result ok": 1, "dsh_bash_jail_starts_total kind fresh layer jail result error": 1,
			"dsh_bash_jail_start_duration_seconds kind fresh layer jail": 1, "dsh_bash_jail_start_duration_seconds kind pooled layer jail": 1}},
	} {
		for _, e := range tc.events {
			sink(e)
		}
		for series, want := range tc.want {
			f := strings.Fields(series)
			if got, ok := value(t, m, f[0], f[1:]...); !ok || got != want {
				t.Errorf("%s: %s = %v (there: %v), want %v", tc.name, series, got, ok, want)
			}
		}
	}
}

// TestLimitKind: a limit's label is its first word, if known.
func TestLimitKind(t *testing.T) {
	for limit, want := range map[string]string{"memory limit 2 GiB": "memory", "Pids limit 4096": "pids",
		"cpu time limit 10s": "cpu", "tmp limit 1 GiB": "tmp", "": "other", "a limit": "other"} {
		if got := LimitKind(limit); got != want {
			t.Errorf("LimitKind(%q) = %q, want %q", limit, got, want)
		}
	}
}

// TestPoolGauges: the pool's gauges are there only with PoolSize, and
// read it at each scrape.
func TestPoolGauges(t *testing.T) {
	if _, ok := value(t, New(&Options{NoRuntime: true}), "dsh_bash_pool_ready_jails"); ok {
		t.Error("a pool gauge without a pool")
	}
	ready := 1
	m := New(&Options{NoRuntime: true, PoolSize: func() (int, int) { return ready, 4 }})
	ready = 3
	if r, _ := value(t, m, "dsh_bash_pool_ready_jails"); r != 3 {
		t.Errorf("ready %v, want 3", r)
	}
	if n, _ := value(t, m, "dsh_bash_pool_target_jails"); n != 4 {
		t.Errorf("target %v, want 4", n)
	}
}

// TestExposition: the handler's exposition, with every kind of event
// counted, passes promtool check metrics (Prometheus' own linter: names,
// units, help, types).
func TestExposition(t *testing.T) {
	m := New(&Options{PoolSize: func() (int, int) { return 2, 2 }})
	for _, e := range []observe.Event{&observe.SessionStart{Front: "acp"}, &observe.Call{Tool: "bash", Outcome: "ok", Task: "bash-1"},
		&observe.TaskEnd{Outcome: "ok"}, &observe.Network{Verdict: "allow"}, &observe.JailStart{Layer: "jail"}} {
		m.Sink()(e)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "dsh_bash_calls_total{outcome=\"ok\",tool=\"bash\"} 1\n") {
		t.Fatalf("GET /metrics: %d\n%s", rec.Code, rec.Body)
	}
	promtooltest.Check(t, rec.Body)
}
