package tools

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/dshgo/dsh/observe"
)

// Registry holds tools and runs calls through the execute pipeline. The
// zero Registry is empty and ready to use; it is safe for concurrent use.
type Registry struct {
	mu         sync.RWMutex
	tools      []*registered
	middleware []Middleware
}

type registered struct {
	tool *Tool
	args *argSchema
}

// Register adds tools. A tool needs a unique name, an Execute function and
// an object InputSchema that resolves.
func (r *Registry) Register(tools ...*Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range tools {
		if t.Name == "" || t.Execute == nil {
			return errors.New("register a tool: it needs a name and an Execute function")
		}
		if r.lookupLocked(t.Name) != nil {
			return fmt.Errorf("register tool %s: a tool of that name is registered already", t.Name)
		}
		args, err := compileArgs(t)
		if err != nil {
			return fmt.Errorf("register tool %s: %w", t.Name, err)
		}
		r.tools = append(r.tools, &registered{tool: t, args: args})
	}
	return nil
}

// Use appends middleware. The first added is the outermost: it sees a call
// first and its result last.
func (r *Registry) Use(mw ...Middleware) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.middleware = append(r.middleware, mw...)
}

func (r *Registry) lookupLocked(name string) *registered {
	for _, t := range r.tools {
		if t.tool.Name == name {
			return t
		}
	}
	return nil
}

// Tool returns the registered tool of that name, or nil.
func (r *Registry) Tool(name string) *Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if t := r.lookupLocked(name); t != nil {
		return t.tool
	}
	return nil
}

// Tools returns the registered tools in registration order.
func (r *Registry) Tools() []*Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Tool, len(r.tools))
	for i, t := range r.tools {
		out[i] = t.tool
	}
	return out
}

// Execute runs a call: it validates the arguments against the tool's
// schema (exactly: see Tool.InputSchema) and its Validate, passes the call through the middleware, then runs the tool. It
// always returns a result: an unknown tool, invalid arguments, a tool's
// error or panic all become error results. An unknown tool and invalid
// arguments are the outcome "invalid" of the call's event, if ctx carries
// one (observe.WithCall).
func (r *Registry) Execute(ctx context.Context, call *Call) *Result {
	r.mu.RLock()
	t := r.lookupLocked(call.Tool)
	mw := slices.Clone(r.middleware)
	r.mu.RUnlock()
	if t == nil {
		return invalid(ctx, fmt.Sprintf("unknown tool %q", call.Tool))
	}
	if err := t.args.validate(call.Args); err != nil {
		return invalid(ctx, err.Error())
	}
	if t.tool.Validate != nil {
		if err := t.tool.Validate(call.Args); err != nil {
			return invalid(ctx, err.Error())
		}
	}
	h := Handler(func(ctx context.Context, call *Call) *Result {
		if call.Started != nil {
			call.Started()
		}
		return runTool(ctx, t.tool, call)
	})
	for _, m := range slices.Backward(mw) {
		h = m(h)
	}
	return safely(ctx, h, call)
}

// runTool calls the tool's Execute and turns its error into a result.
// invalid is the error result of a call whose arguments (or tool) are
// wrong, noted as such in the call's event.
func invalid(ctx context.Context, text string) *Result {
	observe.CallFrom(ctx).Fail(observe.OutcomeInvalid, text)
	return ErrorResult(text)
}

func runTool(ctx context.Context, t *Tool, call *Call) *Result {
	res, err := t.Execute(ctx, call)
	if err != nil {
		return ErrorResult(err.Error())
	}
	if res == nil {
		return ErrorResult(fmt.Sprintf("tool %s returned no result", t.Name))
	}
	return res
}

// safely runs h, turning a panic anywhere in the chain into an error result.
func safely(ctx context.Context, h Handler, call *Call) (res *Result) {
	defer func() {
		if v := recover(); v != nil {
			res = ErrorResult(fmt.Sprintf("tool %s failed: internal error: %v", call.Tool, v))
			res.Meta = map[string]any{"panic": string(debug.Stack())}
		}
	}()
	if res = h(ctx, call); res == nil {
		res = ErrorResult(fmt.Sprintf("tool %s returned no result", call.Tool))
	}
	return res
}
