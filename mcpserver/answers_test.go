//go:build linux

package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/toolbash"
)

// rawCall sends a tools/call with the params as given (the client's own
// multi round-trip handling is off in rawClient), within testwait.Limit.
func rawCall(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	res, err := testwait.Reply("tools/call", func(ctx context.Context) (*mcp.CallToolResult, error) { return cs.CallTool(ctx, p) })
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// rawClient connects a client that declares elicitation, counts the
// elicitations it is sent (answering each "allow once"), and hands input
// requests back to the test instead of answering them.
func rawClient(t *testing.T, r *rig, elicited *atomic.Int32) *mcp.ClientSession {
	return r.connect(t, &mcp.ClientOptions{
		Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": choiceOnce}}, nil
		}}, r.cwd)
}

func accept(decision string) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision}}
}

// TestForgedAnswers: answers a client sends that answer no question this
// server put for that call are refused, and the command does not run: on
// both protocols, with no request state, an unknown one, a spent one,
// another call's, for a question not asked, and with the value of another
// question's form. The server's own round still works.
func TestForgedAnswers(t *testing.T) {
	for _, v := range []string{"", legacy} {
		t.Run(map[string]string{"": "current", legacy: "legacy"}[v], func(t *testing.T) {
			o := permissionOptions(nil)
			if v != "" {
				o.SupportedProtocolVersions = []string{v}
			}
			o.Unsandboxed = true
			r := newRig(t, o)
			var elicited atomic.Int32
			cs := rawClient(t, r, &elicited)
			marker := filepath.Join(r.cwd, "outside")
			args := bashArgs("touch "+marker, "unsandboxed", true)
			both := mcp.InputResponseMap{unsandboxedInput: accept(choiceOutside), permissionInput: accept(choiceOnce)}
			ran := func() bool { _, err := os.Stat(marker); return err == nil }
			for _, tc := range []struct {
				name  string
				state string
				resp  mcp.InputResponseMap
			}{
				{"answers, no state", "", both},
				{"the other form's value", "", mcp.InputResponseMap{unsandboxedInput: accept(choiceOnce), permissionInput: accept(choiceOnce)}},
				{"a made-up state", "dsh-00000000000000000000000000000000", both},
				{"a state alone", "dsh-00000000000000000000000000000000", nil},
			} {
				res := rawCall(t, cs, &mcp.CallToolParams{Name: "bash", Arguments: args, InputResponses: tc.resp, RequestState: tc.state})
				if !res.IsError || !strings.HasPrefix(text(res), "the answers sent with this call answer no question this server put for it") {
					t.Errorf("%s: %q", tc.name, text(res))
				}
			}
			if ran() || elicited.Load() != 0 {
				t.Fatalf("forged answers: ran %v, asked %d times", ran(), elicited.Load())
			}
			if v == legacy {
				return // the server asks within the call: no round to answer
			}
			// The server's round: both questions, under a state.
			first := rawCall(t, cs, &mcp.CallToolParams{Name: "bash", Arguments: args})
			if len(first.InputRequests) != 2 || first.RequestState == "" {
				t.Fatalf("the first round: %+v", first)
			}
			other := rawCall(t, cs, &mcp.CallToolParams{Name: "bash", Arguments: bashArgs("echo other", "unsandboxed", true)})
			for _, tc := range []struct {
				name  string
				args  map[string]any
				state string
				resp  mcp.InputResponseMap
				want  string
			}{
				{"another call's state", args, other.RequestState, both, "the answers sent with this call answer no question this server put for it (the questions were about another call)"},
				{"a question not asked", args, first.RequestState, mcp.InputResponseMap{"dsh-other": accept(choiceOnce)}, `("dsh-other" was not asked)`},
				// first's round was spent by the call before.
				{"a spent state", args, first.RequestState, both, "(no round of questions is waiting under its request state)"},
			} {
				res := rawCall(t, cs, &mcp.CallToolParams{Name: "bash", Arguments: tc.args, InputResponses: tc.resp, RequestState: tc.state})
				if !res.IsError || !strings.Contains(text(res), tc.want) {
					t.Errorf("%s: %q; want %q", tc.name, text(res), tc.want)
				}
			}
			round := rawCall(t, cs, &mcp.CallToolParams{Name: "bash", Arguments: args})
			wrong := mcp.InputResponseMap{unsandboxedInput: accept(choiceOnce), permissionInput: accept(choiceOnce)}
			res := rawCall(t, cs, &mcp.CallToolParams{Name: "bash", Arguments: args, InputResponses: wrong, RequestState: round.RequestState})
			if !res.IsError || !strings.Contains(text(res), "not one of the question's choices") || ran() {
				t.Errorf("the other form's value: %q (ran %v)", text(res), ran())
			}
			round = rawCall(t, cs, &mcp.CallToolParams{Name: "bash", Arguments: args})
			res = rawCall(t, cs, &mcp.CallToolParams{Name: "bash", Arguments: args, InputResponses: both, RequestState: round.RequestState})
			if res.IsError || !ran() {
				t.Errorf("the server's own round, answered: %q (ran %v)", text(res), ran())
			}
		})
	}
}

// TestCancelIsNoAnswer: a client that dismisses a question (cancel) has
// not declined: the model reads that nobody answered and how the user can
// allow the command, nothing is remembered, and the next call asks again.
func TestCancelIsNoAnswer(t *testing.T) {
	for _, v := range []string{"", legacy} {
		t.Run(map[string]string{"": "current", legacy: "legacy"}[v], func(t *testing.T) {
			r := permissionRig(t, map[string][]string{"": nil, legacy: {legacy}}[v]...)
			var asked atomic.Int32
			cs := r.connect(t, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked.Add(1)
					return &mcp.ElicitResult{Action: "cancel"}, nil
				}}, r.cwd)
			want := "this command needs the user's approval (no rule allows `mkdir a`), and nobody answered the question (the client dismissed it without the user's answer); it did not run. The user can allow it with a rule: --allow 'mkdir'."
			for range 2 {
				if res := call(t, cs, "bash", bashArgs("mkdir a")); !res.IsError || text(res) != want {
					t.Errorf("got %q\nwant %q", text(res), want)
				}
			}
			if asked.Load() != 2 {
				t.Errorf("asked %d times; want 2 (a cancel is not remembered)", asked.Load())
			}
		})
	}
}

// TestUnsandboxedListedWhereAsked: the argument unsandboxed, and
// instructions that tell of it, reach only sessions whose client can be
// asked; a call that sets it anyway from another client is refused and
// does not run.
func TestUnsandboxedListedWhereAsked(t *testing.T) {
	for _, v := range []string{"", legacy} {
		t.Run(map[string]string{"": "current", legacy: "legacy"}[v], func(t *testing.T) {
			o := &Options{Unsandboxed: true, Sandbox: &toolbash.SandboxFacts{}, Instructions: "ask away", CannotAskInstructions: "no asking"}
			if v != "" {
				o.SupportedProtocolVersions = []string{v}
			}
			r := newRig(t, o)
			var n atomic.Int32
			asks := rawClient(t, r, &n)
			mute := r.connect(t, nil, r.cwd)
			for _, tc := range []struct {
				name         string
				cs           *mcp.ClientSession
				listed       bool
				instructions string
			}{{"asks", asks, true, "ask away"}, {"mute", mute, false, "no asking"}} {
				res, err := testwait.Reply("tools/list", func(ctx context.Context) (*mcp.ListToolsResult, error) { return tc.cs.ListTools(ctx, nil) })
				if err != nil {
					t.Fatal(err)
				}
				listed := false
				for _, tool := range res.Tools {
					if tool.Name == "bash" {
						_, listed = tool.InputSchema.(map[string]any)["properties"].(map[string]any)["unsandboxed"]
					}
				}
				if listed != tc.listed || tc.cs.InitializeResult().Instructions != tc.instructions {
					t.Errorf("%s: listed %v, instructions %q; want %v, %q", tc.name, listed, tc.cs.InitializeResult().Instructions, tc.listed, tc.instructions)
				}
			}
			marker := filepath.Join(r.cwd, "x")
			if res := call(t, mute, "bash", bashArgs("touch "+marker, "unsandboxed", true)); !res.IsError || !strings.Contains(text(res), "this client cannot ask the user") {
				t.Errorf("mute client: %q", text(res))
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("it ran")
			}
		})
	}
}

// TestEarlierAnswerIsToItsQuestion: an answer a call brought in an
// earlier round counts only for the question the user saw: once the
// session's directory changes between the rounds (the client's roots
// changed), the question is put again, and the command does not run in
// a directory the user never approved.
func TestEarlierAnswerIsToItsQuestion(t *testing.T) {
	r := permissionRig(t)
	dir1, dir2 := t.TempDir(), t.TempDir()
	st, ct := mcp.NewInMemoryTransports()
	ran := make(chan error, 1)
	go func() { ran <- r.srv.Run(context.Background(), st) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "raw"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}},
			RootsV2: &mcp.RootCapabilities{ListChanged: true}},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	cs := connectClient(t, c, ct)
	t.Cleanup(func() {
		cs.Close()
		testwait.Recv(t, ran, "return of Run")
	})
	// The session's directory is known from an earlier call.
	p := &mcp.CallToolParams{Name: "bash", Arguments: bashArgs("echo hi")}
	res := rawCall(t, cs, p)
	p.InputResponses = mcp.InputResponseMap{"roots": &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file://" + dir1}}}}
	p.RequestState = res.RequestState
	if res = rawCall(t, cs, p); text(res) != "hi\n" {
		t.Fatalf("echo: %+v", res)
	}
	p = &mcp.CallToolParams{Name: "bash", Arguments: bashArgs("touch marker")}
	res = rawCall(t, cs, p)
	q, ok := res.InputRequests[permissionInput].(*mcp.ElicitParams)
	if !ok || !strings.Contains(q.Message, dir1) {
		t.Fatalf("the question: %+v", res)
	}
	// The roots change (as the client's notification does), then the
	// answer comes: the directory is asked for again first.
	r.srv.mu.Lock()
	for _, st := range r.srv.sessions {
		st.forgetRoots()
	}
	r.srv.mu.Unlock()
	p.InputResponses = mcp.InputResponseMap{permissionInput: accept(choiceOnce)}
	p.RequestState = res.RequestState
	res = rawCall(t, cs, p)
	if res.InputRequests["roots"] == nil {
		t.Fatalf("after the roots changed: %q", text(res))
	}
	p.InputResponses = mcp.InputResponseMap{"roots": &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file://" + dir2}}}}
	p.RequestState = res.RequestState
	res = rawCall(t, cs, p)
	if q, ok := res.InputRequests[permissionInput].(*mcp.ElicitParams); !ok || !strings.Contains(q.Message, dir2) {
		t.Errorf("the answer to the question about %s ran the command in %s: %q", dir1, dir2, text(res))
	}
	for _, d := range []string{dir1, dir2} {
		if _, err := os.Stat(filepath.Join(d, "marker")); err == nil {
			t.Errorf("it ran in %s", d)
		}
	}
}
