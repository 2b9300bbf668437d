// Package metrics counts the server's events (package observe) as
// Prometheus metrics, with the ecosystem's client library, on a registry
// of its own (never the process-wide default), and serves them in the
// Prometheus text format.
//
// Make a Metrics with New, give its Sink to the producers of events
// (observe.Tee it with the audit log's), and serve its Handler. Every
// label takes its values from a fixed set (a value outside it counts as
// "other"): no session, command, host or path is ever a label, so the
// number of series stays bounded however the server is used. The metrics
// are listed, with their meaning, in docs/operations.md ("Metrics").
package metrics

import (
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dshgo/dsh/toolbash"
)

// Options configure New. A nil *Options means defaults.
type Options struct {
	// PoolSize, if set, says at each scrape how many jails the warm pool
	// has ready and how many it keeps (its target): the gauges
	// dsh_bash_pool_ready_jails and dsh_bash_pool_target_jails. Nil: no
	// pool, and no such gauge.
	PoolSize func() (ready, target int)
	// Tools are the tool names calls are counted by; a call of another
	// name (a model's invention, over ACP) counts as "other". Default:
	// the five shell tools.
	Tools []string
	// NoRuntime leaves out the Go runtime's and the process's own
	// metrics (go_*, process_*). Default: they are in.
	NoRuntime bool
}

// Metrics are the server's metrics. Make them with New.
type Metrics struct {
	reg   *prometheus.Registry
	tools []string

	sessionsStarted *prometheus.CounterVec
	sessionsEnded   *prometheus.CounterVec
	sessionsOpen    *prometheus.GaugeVec
	calls           *prometheus.CounterVec
	callSeconds     *prometheus.HistogramVec
	tasksStarted    prometheus.Counter
	tasksEnded      *prometheus.CounterVec
	jailStarts      *prometheus.CounterVec
	jailSeconds     *prometheus.HistogramVec
	limitKills      *prometheus.CounterVec
	network         *prometheus.CounterVec
	permissions     *prometheus.CounterVec
	unsandboxed     *prometheus.CounterVec
	spilled         prometheus.Counter
	refused         prometheus.Counter

	running atomic.Int64 // tasks started less tasks ended
}

// Buckets of the histograms, in seconds: a call from a millisecond (a
// bash_output) to ten minutes (bash's longest timeout); a jail's start
// from a millisecond (a claim from the pool) to ten seconds.
var (
	CallBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	JailBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
)

// New makes the metrics, on a registry of their own.
func New(opts *Options) *Metrics {
	if opts == nil {
		opts = &Options{}
	}
	m := &Metrics{reg: prometheus.NewRegistry(), tools: opts.Tools}
	if m.tools == nil {
		m.tools = []string{toolbash.BashName, toolbash.OutputName, toolbash.KillName, toolbash.InputName, toolbash.TasksName}
	}
	m.sessionMetrics()
	m.callMetrics()
	m.jailMetrics(opts.PoolSize)
	m.guardMetrics()
	if !opts.NoRuntime {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m.zero()
	return m
}

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry is the registry the metrics are on, for a caller that adds its
// own or gathers them.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

func (m *Metrics) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	m.reg.MustRegister(c)
	return c
}

func (m *Metrics) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	m.reg.MustRegister(c)
	return c
}

func (m *Metrics) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	m.reg.MustRegister(h)
	return h
}

func (m *Metrics) gaugeFunc(name, help string, f func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}

func (m *Metrics) sessionMetrics() {
	m.sessionsStarted = m.counterVec("dsh_bash_sessions_started_total", "Client sessions started, by front end.", "front")
	m.sessionsEnded = m.counterVec("dsh_bash_sessions_ended_total", "Client sessions ended, by front end and why: closed by the client, idle (its client gone), shutdown.", "front", "reason")
	m.sessionsOpen = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dsh_bash_sessions_open", Help: "Client sessions open, by front end."}, []string{"front"})
	m.reg.MustRegister(m.sessionsOpen)
}

func (m *Metrics) callMetrics() {
	m.calls = m.counterVec("dsh_bash_calls_total", "Tool calls, by tool and outcome.", "tool", "outcome")
	m.callSeconds = m.histogramVec("dsh_bash_call_duration_seconds", "Time from a tool call's arrival to its result, by tool.", CallBuckets, "tool")
	m.tasksStarted = m.counter("dsh_bash_tasks_started_total", "Background tasks started (run_in_background, input, tty) or adopted from a foreground command's leftovers.")
	m.tasksEnded = m.counterVec("dsh_bash_tasks_ended_total", "Background tasks ended, by outcome.", "outcome")
	m.gaugeFunc("dsh_bash_tasks_running", "Background tasks running: started and not ended.", func() float64 {
		return float64(max(m.running.Load(), 0)) // an end may be told before its start
	})
}

func (m *Metrics) jailMetrics(pool func() (ready, target int)) {
	m.jailStarts = m.counterVec("dsh_bash_jail_starts_total", "Sandbox jails (or Landlock-layer agents) started, by layer, kind (fresh: for a session; pooled: a session's, claimed from the warm pool; refill: into the pool) and result (ok, error).", "layer", "kind", "result")
	m.jailSeconds = m.histogramVec("dsh_bash_jail_start_duration_seconds", "Time a jail took to start (for kind pooled, to be claimed), by layer and kind; failed starts are not in it.", JailBuckets, "layer", "kind")
	if pool == nil {
		return
	}
	m.gaugeFunc("dsh_bash_pool_ready_jails", "Jails started and waiting in the warm pool.", func() float64 { r, _ := pool(); return float64(r) })
	m.gaugeFunc("dsh_bash_pool_target_jails", "Jails the warm pool keeps ready.", func() float64 { _, t := pool(); return float64(t) })
}

func (m *Metrics) guardMetrics() {
	m.limitKills = m.counterVec("dsh_bash_limit_kills_total", "Commands (foreground calls and background tasks) a resource limit ended, by limit: memory, pids, cpu, tmp, other.", "limit")
	m.network = m.counterVec("dsh_bash_network_decisions_total", "Decisions of the network allowlist on commands' connections, by verdict (allow, deny) and whether the user was asked.", "verdict", "asked")
	m.permissions = m.counterVec("dsh_bash_permission_verdicts_total", "Verdicts of the permission rules on bash calls (allow, deny, ask), by the user's answer to an ask (none for other verdicts).", "verdict", "answer")
	m.unsandboxed = m.counterVec("dsh_bash_unsandboxed_questions_total", "Calls that asked to run outside the sandbox, by the user's answer.", "answer")
	m.spilled = m.counter("dsh_bash_spilled_bytes_total", "Bytes of foreground calls' output streams kept in spill files.")
	m.refused = m.counter("dsh_bash_refused_execs_total", "Programs refused at their exec by a deny rule, in foreground calls.")
}
