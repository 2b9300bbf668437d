package remote

import (
	"context"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/internal/coalesce"
)

// handler runs one method; an error is bad params.
type handler func(s *server, ctx context.Context, req *jsonrpc2.Request) (*reply, error)

var handlers = map[string]handler{
	methodResolve:    (*server).resolve,
	methodRun:        (*server).run,
	methodStart:      (*server).start,
	methodGet:        (*server).get,
	methodList:       (*server).list,
	methodOwnerOf:    (*server).ownerOf,
	methodReadOutput: (*server).readOutput,
	methodKill:       (*server).kill,
	methodWriteInput: (*server).writeInput,
	methodEndOwner:   (*server).endOwner,
	methodClose:      (*server).close,
}

func (s *server) resolve(ctx context.Context, req *jsonrpc2.Request) (*reply, error) {
	var p bash.ExecRequest
	if err := unmarshal(req, &p); err != nil {
		return nil, err
	}
	spec, err := s.exec.Resolve(ctx, p)
	if err != nil {
		return &reply{Err: toWireError(err)}, nil
	}
	w := toWireSpec(spec)
	return &reply{Spec: &w}, nil
}

// run streams the run's output, when asked, as output notifications that
// all go out before the reply.
func (s *server) run(ctx context.Context, req *jsonrpc2.Request) (*reply, error) {
	var p wireSpec
	if err := unmarshal(req, &p); err != nil {
		return nil, err
	}
	spec := p.spec()
	if p.Stream {
		call := req.ID.Num
		// The executor's observer must not block; the link may: a Sender
		// in between keeps the output in order, in bounded memory, and
		// drops the oldest when the link is slow (the result holds all).
		out := coalesce.New(func(pc coalesce.Piece) {
			_ = s.conn.Notify(ctx, methodOutput, outputNote{Call: call, Stream: bash.Stream(pc.Stream), Text: pc.Text, Skipped: pc.Skipped})
		}, &coalesce.Options{Every: s.opts.outputEvery(), MaxPending: s.opts.maxPendingOutput()})
		spec.OnOutput = func(stream bash.Stream, text []byte) { out.AddTo(string(stream), text) }
		defer out.Close()
	}
	res, err := s.exec.Run(ctx, spec)
	return &reply{Result: &res, Err: toWireError(err)}, nil
}

func (s *server) start(ctx context.Context, req *jsonrpc2.Request) (*reply, error) {
	var p wireSpec
	if err := unmarshal(req, &p); err != nil {
		return nil, err
	}
	t, err := s.exec.Start(ctx, p.spec())
	return taskReply(t, err), nil
}

func taskReply(t bash.Task, err error) *reply {
	if err != nil && t.ID == "" {
		return &reply{Err: toWireError(err)}
	}
	w := toWireTask(t)
	return &reply{Task: &w, Err: toWireError(err)}
}

func (s *server) get(ctx context.Context, req *jsonrpc2.Request) (*reply, error) {
	var p taskParams
	if err := unmarshal(req, &p); err != nil {
		return nil, err
	}
	t, err := s.exec.Get(ctx, p.ID)
	return taskReply(t, err), nil
}

func (s *server) list(ctx context.Context, _ *jsonrpc2.Request) (*reply, error) {
	tasks, err := s.exec.List(ctx)
	r := &reply{Tasks: make([]wireTask, len(tasks)), Err: toWireError(err)}
	for i, t := range tasks {
		r.Tasks[i] = toWireTask(t)
	}
	return r, nil
}

func (s *server) ownerOf(ctx context.Context, req *jsonrpc2.Request) (*reply, error) {
	var p taskParams
	if err := unmarshal(req, &p); err != nil {
		return nil, err
	}
	owner, err := s.exec.OwnerOf(ctx, p.ID)
	return &reply{Owner: owner, Err: toWireError(err)}, nil
}

func (s *server) readOutput(ctx context.Context, req *jsonrpc2.Request) (*reply, error) {
	var p taskParams
	if err := unmarshal(req, &p); err != nil {
		return nil, err
	}
	r, err := s.exec.ReadOutput(ctx, p.ID)
	if err != nil {
		return &reply{Err: toWireError(err)}, nil
	}
	return &reply{Read: &wireRead{Task: toWireTask(r.Task), Stdout: r.Stdout, Stderr: r.Stderr}}, nil
}

func (s *server) kill(ctx context.Context, req *jsonrpc2.Request) (*reply, error) {
	var p taskParams
	if err := unmarshal(req, &p); err != nil {
		return nil, err
	}
	killed, err := s.exec.Kill(ctx, p.ID)
	s.dones.flush(ctx) // the task's end goes out before the reply, as listeners hear of it before Kill returns
	return &reply{Killed: killed, Err: toWireError(err)}, nil
}

func (s *server) writeInput(ctx context.Context, req *jsonrpc2.Request) (*reply, error) {
	var p inputParams
	if err := unmarshal(req, &p); err != nil {
		return nil, err
	}
	r, err := s.exec.WriteInput(ctx, p.ID, bash.Input{Data: p.Data, EOF: p.EOF, Wait: p.Wait, Settle: p.Settle, Quiet: p.Quiet})
	if err != nil {
		return &reply{Err: toWireError(err)}, nil
	}
	return &reply{Read: &wireRead{Task: toWireTask(r.Task), Stdout: r.Stdout, Stderr: r.Stderr}}, nil
}

func (s *server) endOwner(ctx context.Context, req *jsonrpc2.Request) (*reply, error) {
	var p ownerParams
	if err := unmarshal(req, &p); err != nil {
		return nil, err
	}
	if oe, ok := s.exec.(ownerEnder); ok {
		return &reply{Err: toWireError(oe.EndOwner(ctx, p.Owner))}, nil
	}
	return &reply{}, nil
}

// close closes the executor: every task is killed and waited for before
// the reply, so the client's Close returns with nothing left running.
func (s *server) close(context.Context, *jsonrpc2.Request) (*reply, error) {
	return &reply{Err: toWireError(s.exec.Close())}, nil
}
