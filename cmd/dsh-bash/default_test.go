//go:build linux

package main

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"

	"github.com/dshgo/dsh/internal/acptest"
	"github.com/dshgo/dsh/internal/fakellm"
)

// TestMCPDenyList: over MCP, with a client that cannot be asked, --deny
// alone is a deny list: a command no rule matches runs (the client gates
// each call itself), a denied one does not, and neither does one that
// cannot be known statically (it might be the denied one). --default ask,
// from the flag or the configuration file, makes the unmatched command a
// question, which this client cannot answer.
func TestMCPDenyList(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(cfg, []byte(`{"permissions": {"deny": ["rm -rf"], "default": "ask"}}`), 0o600)
	for _, tc := range []struct {
		name  string
		flags []string
		runs  bool // touch f
	}{
		{"default", []string{"--deny", "rm -rf"}, true},
		{"--default allow", []string{"--deny", "rm -rf", "--default", "allow"}, true},
		{"--default ask", []string{"--deny", "rm -rf", "--default", "ask"}, false},
		{"config default ask", []string{"--config", cfg}, false},
		{"config default ask, --default allow", []string{"--config", cfg, "--default", "allow"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "x", "y"), 0o755)
			cs, _ := mcpClient(t, append([]string{"--cwd", dir}, tc.flags...)...)
			bash := func(cmd string) string {
				return callText(t, cs, "bash", map[string]any{"command": cmd, "description": "d"})
			}
			got := bash("touch f")
			_, err := os.Stat(filepath.Join(dir, "f"))
			if ran := err == nil; ran != tc.runs {
				t.Errorf("touch f: ran %v, want %v: %q", ran, tc.runs, got)
			}
			if !tc.runs && got != "this command needs the user's approval (no rule allows `touch f`), and this client cannot ask the user; it did not run. The user can allow it with a rule: start dsh-bash with --allow 'touch' or add \"touch\" to \"permissions\": {\"allow\": […]} in "+cmp.Or(tcConfig(tc.flags), defaultConfigPath())+"." {
				t.Errorf("touch f, asked: %q", got)
			}
			source := "--deny"
			if tcConfig(tc.flags) != "" {
				source = cfg
			}
			want := "permission denied: `rm -rf x` matches rule deny \"rm -rf\" (" + source + "). The command did not run; do not try to get around the rule. If the command is needed, ask the user."
			if got := bash("rm -rf x"); got != want {
				t.Errorf("rm -rf x: %q\nwant %q", got, want)
			}
			got = bash("c=rm; $c -rf x")
			if !strings.HasPrefix(got, "this command needs the user's approval (its command name is only known when it runs), and this client cannot ask the user; it did not run.") {
				t.Errorf("$c -rf x: %q", got)
			}
			if _, err := os.Stat(filepath.Join(dir, "x", "y")); err != nil {
				t.Errorf("x was removed: %v", err)
			}
		})
	}
}

// tcConfig is the --config file among flags, if any.
func tcConfig(flags []string) string {
	if i := slices.Index(flags, "--config"); i >= 0 {
		return flags[i+1]
	}
	return ""
}

// TestACPDefaultAsks: the ACP agent asks about a command no rule matches
// (the editor is the one place the user answers), and about one that
// cannot be known statically, but never about a denied one; --default
// allow runs the unmatched command unasked, and still asks about the
// rest. The editor here rejects every question.
func TestACPDefaultAsks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
		asked []string // the questions' titles, in order
		runs  bool     // touch f
	}{
		{"default", nil, []string{"touch f", "c=rm; $c -rf x"}, false},
		{"--default ask", []string{"--default", "ask"}, []string{"touch f", "c=rm; $c -rf x"}, false},
		{"--default allow", []string{"--default", "allow"}, []string{"c=rm; $c -rf x"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "x", "y"), 0o755)
			call := func(id, cmd string) fakellm.Call {
				return fakellm.Call{ID: id, Name: "bash", Args: map[string]any{"command": cmd, "description": "d", "workdir": dir}}
			}
			model := fakellm.New(t, fakellm.Turn{Calls: []fakellm.Call{call("c1", "touch f"), call("c2", "rm -rf x"), call("c3", "c=rm; $c -rf x")}},
				fakellm.Turn{Text: "done"})
			ed := acptest.New()
			ed.SetAnswer(func(acp.RequestPermissionRequest) acp.RequestPermissionResponse {
				return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected("reject-once")}
			})
			promptACP(t, ed, append([]string{"acp", "--model", "m", "--base-url", model.URL, "--deny", "rm -rf"}, tc.flags...)...)
			var titles []string
			for _, q := range ed.Asked() {
				if q.ToolCall.Title != nil {
					titles = append(titles, *q.ToolCall.Title)
				}
			}
			if !slices.Equal(titles, tc.asked) {
				t.Errorf("asked about %q, want %q", titles, tc.asked)
			}
			_, err := os.Stat(filepath.Join(dir, "f"))
			if ran := err == nil; ran != tc.runs {
				t.Errorf("touch f ran: %v, want %v", ran, tc.runs)
			}
			if _, err := os.Stat(filepath.Join(dir, "x", "y")); err != nil {
				t.Errorf("x was removed: %v", err)
			}
			msgs := strings.Join(model.Request(1).MessageTexts(), "\n")
			if !strings.Contains(msgs, "tool: permission denied: `rm -rf x` matches rule deny \"rm -rf\" (--deny).") {
				t.Errorf("the model read %q", msgs)
			}
		})
	}
}

// TestDefaultSetting: --default takes allow or ask; given alone, it turns
// the checks on (the built-in read-only rules, the default for the rest);
// doctor says what a command no rule matches does, and what set it.
func TestDefaultSetting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, errOut, code := dshBash(t, dir, "run", "--default", "never", "--", "true")
	if code != 2 || !strings.Contains(errOut, `invalid value "never" for flag -default: must be allow or ask`) {
		t.Errorf("--default never: exit %d, %q", code, errOut)
	}
	out, _, code := dshBash(t, dir, "run", "--default", "ask", "--", "ls; mkdir asked")
	if code != 1 || !strings.HasPrefix(out, "this command needs the user's approval (no rule allows `mkdir asked`)") {
		t.Errorf("--default ask alone: %q (exit %d)", out, code)
	}
	cfg := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(cfg, []byte(`{"permissions": {"default": "allow", "defaults": false}}`), 0o600)
	const unknowable = "commands that cannot be known statically: asked about, whatever the default (a command named by a variable, eval of a variable, a write outside the workspace, …)\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "permissions: no rules, nothing checked: under mcp and run every command runs (an MCP client asks its user before each call it was not told to allow); under acp every call is asked about\n"},
		{[]string{"--deny", "rm -rf", "--allow", "go test", "--allow", "make"},
			"permissions: 2 allow, 0 ask and 1 deny rules; the built-in read-only rules on; a workspace's .dsh/permissions.json not read\n" +
				"unmatched commands: run under mcp and run, asked about under acp (each front end's default; set one with --default allow|ask, or \"default\" in \"permissions\")\n" + unknowable +
				"deny rules: enforced where programs start as well, at every exec of every command (traced with ptrace); a workspace's own are not\n"},
		{[]string{"--default", "ask"},
			"permissions: 0 allow, 0 ask and 0 deny rules; the built-in read-only rules on; a workspace's .dsh/permissions.json not read\n" +
				"unmatched commands: asked about (--default)\n" + unknowable},
		{[]string{"--config", cfg, "--ask", "git push"},
			"permissions: 0 allow, 1 ask and 0 deny rules; the built-in read-only rules off; a workspace's .dsh/permissions.json not read\n" +
				"unmatched commands: run (\"default\" in " + cfg + ")\n" + unknowable},
	} {
		out, errOut, code := dshBash(t, dir, append([]string{"doctor"}, tc.args...)...)
		if _, got, _ := strings.Cut(out, "\npermissions: "); code != 0 || "permissions: "+got != tc.want {
			t.Errorf("doctor %q: exit %d, stdout %q (stderr %q)\nwant the end %q", tc.args, code, out, errOut, tc.want)
		}
	}
}
