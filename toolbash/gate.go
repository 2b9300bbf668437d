package toolbash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dshgo/dsh/observe"
	"github.com/dshgo/dsh/permission"
	"github.com/dshgo/dsh/tools"
)

// Question is what a Gate asks the user about: a bash call that no rule
// allows, and why.
type Question struct {
	Call    *tools.Call
	Command string
	Workdir string
	// Description is the model's description of the call (its reason,
	// where the call asks to run outside the sandbox).
	Description string
	Verdict     permission.Verdict
	// Unsandboxed: the call asks to run outside the sandbox (see
	// Options.AskUnsandboxed), a question of its own: only AllowOnce runs
	// it, and nothing of the answer is remembered.
	Unsandboxed bool
	// Background: the command starts as a background task, and runs on
	// after the call returns, until it ends or is killed (a question
	// should say so).
	Background bool
}

// HowLong says, for a question to run a call outside the sandbox, how
// long what the call starts runs there: a background command until it
// ends or is stopped; a foreground one's leftovers are stopped when it
// ends.
func (q Question) HowLong() string {
	if q.Background {
		return "It starts in the background and keeps running, outside the sandbox, until it ends or is stopped."
	}
	return "What it leaves running is stopped when it ends."
}

// Answer is the user's answer.
type Answer int

const (
	// Reject: the command does not run.
	Reject Answer = iota
	// AllowOnce: it runs, this once.
	AllowOnce
	// AllowPrefixes: it runs, and the question's Verdict.Prefixes are
	// allowed for the rest of the session.
	AllowPrefixes
)

// Asker asks the user; front ends supply it. An error means the user could
// not be asked; ErrCannotAsk, that this client has no way to ask (the ask
// becomes a denial that says how to add a rule). The call's result
// carries the error back to the front end (tools.Result.Err).
type Asker func(ctx context.Context, q Question) (Answer, error)

// ErrCannotAsk is an Asker's error for a client that cannot ask its user.
var ErrCannotAsk = errors.New("this client cannot ask the user")

// ErrNoAnswer is an Asker's error for a question nobody answered: the
// client dismissed it without the user's answer (an MCP elicitation's
// "cancel"). It is no decision of the user's: nothing is remembered, and
// the model reads how the user can allow the command.
var ErrNoAnswer = errors.New("nobody answered the question")

// GateOptions configure a Gate. A nil *GateOptions checks nothing.
type GateOptions struct {
	// Policy is the rules.
	Policy *permission.Policy
	// Project, if set, returns the rules of a session's workspace (its
	// project file), added to Policy's: a deny in either wins.
	Project func(workspace string) []permission.Rule
	// Ask asks the user; nil turns every ask into a denial that says how
	// to allow the command with a rule.
	Ask Asker
	// HowToAllow says how the user adds an allow rule, in the denial of
	// an ask nobody could answer ("add --allow 'PREFIX'").
	HowToAllow func(prefix string) string
}

// Gate checks each bash call against permission rules before it runs: a
// denied command never starts, and the model reads which rule denied it;
// an ask goes to the user. It is middleware of the tools' pipeline, so
// every front end gets it.
type Gate struct {
	opts GateOptions

	mu      sync.Mutex
	allowed map[string][]permission.Rule // per session: prefixes the user allowed
}

// NewGate makes a gate.
func NewGate(o *GateOptions) *Gate {
	g := &Gate{allowed: map[string][]permission.Rule{}}
	if o != nil {
		g.opts = *o
	}
	return g
}

// Middleware is the gate as tools middleware.
func (g *Gate) Middleware(next tools.Handler) tools.Handler {
	return func(ctx context.Context, call *tools.Call) *tools.Result {
		if call.Tool != BashName || g.opts.Policy == nil {
			return next(ctx, call)
		}
		var a bashArgs
		if err := json.Unmarshal(call.Args, &a); err != nil {
			return next(ctx, call) // the tool says what is wrong
		}
		noteBash(ctx, a)
		workdir := callWorkdir(a, call)
		v := g.policyFor(call).Check(a.Command, workdir, call.Session.Cwd)
		noted := notePermission(ctx, v)
		switch v.Decision {
		case permission.Allow:
			return next(ctx, call)
		case permission.Deny:
			return denied(ctx, deniedText(v))
		}
		return g.ask(ctx, next, call, noted, Question{Call: call, Command: a.Command, Workdir: workdir, Description: a.Description, Verdict: v})
	}
}

// callWorkdir is the directory the call runs in, as the bash tool makes it.
func callWorkdir(a bashArgs, call *tools.Call) string {
	wd := call.Session.Cwd
	if a.Workdir != nil && *a.Workdir != "" {
		wd = *a.Workdir
		if !filepath.IsAbs(wd) && call.Session.Cwd != "" {
			wd = filepath.Join(call.Session.Cwd, wd)
		}
	}
	return wd
}

// policyFor is the policy with the session's project rules and the
// prefixes its user allowed.
func (g *Gate) policyFor(call *tools.Call) *permission.Policy {
	p := *g.opts.Policy
	p.Rules = append([]permission.Rule(nil), p.Rules...)
	if g.opts.Project != nil && call.Session.Cwd != "" {
		p.Rules = append(p.Rules, g.opts.Project(call.Session.Cwd)...)
	}
	g.mu.Lock()
	p.Granted = append(append([]permission.Rule(nil), p.Granted...), g.allowed[call.Session.ID]...)
	g.mu.Unlock()
	return &p
}

// ask asks the user about the call, noting the answer in the call's
// event (noted, nil when nobody observes the call).
func (g *Gate) ask(ctx context.Context, next tools.Handler, call *tools.Call, noted *observe.Permission, q Question) *tools.Result {
	if g.opts.Ask == nil {
		noteAnswer(noted, answerCannotAsk)
		return denied(ctx, unapprovedText(q.Verdict, "this client cannot ask the user", g.opts.HowToAllow))
	}
	ans, err := g.opts.Ask(ctx, q)
	switch {
	case err != nil || ctx.Err() != nil:
		noteAnswer(noted, unanswered(ctx, err))
		res := denied(ctx, g.unansweredText(ctx, q, err))
		res.Err = err
		return res
	case ans == AllowPrefixes:
		noteAnswer(noted, answerSession)
		g.allow(call.Session.ID, q.Verdict.Prefixes)
		return next(ctx, call)
	case ans == AllowOnce:
		noteAnswer(noted, answerOnce)
		return next(ctx, call)
	}
	noteAnswer(noted, answerDenied)
	return denied(ctx, RejectedText)
}

// unansweredText is what the model reads of a call whose question got no
// answer: the asker failed with err, or the call was aborted.
func (g *Gate) unansweredText(ctx context.Context, q Question, err error) string {
	switch {
	case errors.Is(err, ErrCannotAsk):
		return unapprovedText(q.Verdict, "this client cannot ask the user", g.opts.HowToAllow)
	case errors.Is(err, ErrNoAnswer):
		return unapprovedText(q.Verdict, "nobody answered the question (the client dismissed it without the user's answer)", g.opts.HowToAllow)
	case ctx.Err() != nil:
		return "command aborted"
	}
	return fmt.Sprintf("this command needs the user's approval, and the user could not be asked (%v); it did not run", err)
}

// allow remembers prefixes the user allowed for the session.
func (g *Gate) allow(session string, prefixes []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range prefixes {
		if r, err := permission.NewRule(permission.Allow, p, "allowed by the user in this session"); err == nil {
			g.allowed[session] = append(g.allowed[session], r)
		}
	}
}

// EndSession forgets what the session's user allowed.
func (g *Gate) EndSession(session string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.allowed, session)
}

// deniedText is what the model reads for a denied command.
func deniedText(v permission.Verdict) string {
	return fmt.Sprintf("permission denied: %s. The command did not run; do not try to get around the rule. If the command is needed, ask the user.", v.Reason)
}

// RejectedText is what the model reads when the user declined a command.
const RejectedText = "the user declined to run this command; it did not run. Ask the user how to proceed."

// unapprovedText is what the model reads for a command that needed
// approval where nobody gave it, and why not.
func unapprovedText(v permission.Verdict, why string, howToAllow func(string) string) string {
	s := fmt.Sprintf("this command needs the user's approval (%s), and %s; it did not run.", v.Reason, why)
	switch {
	case v.Rule != nil && v.Rule.Decision == permission.Ask:
		// An allow rule would not win over it: the user asked to be asked.
		s += " The user's own rule asks about it: ask the user to run it, or to remove that rule."
	case len(v.Prefixes) > 0 && howToAllow != nil:
		var hows []string
		for _, p := range v.Prefixes {
			hows = append(hows, howToAllow(p))
		}
		s += " The user can allow it with a rule: " + strings.Join(hows, "; ") + "."
	default:
		s += " Try a simpler command, or ask the user to run it."
	}
	return s
}
