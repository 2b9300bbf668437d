//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/permission"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mvdan.cc/sh/v3/shell"
	"mvdan.cc/sh/v3/syntax"
)

// hintedCommands need approval where no rule allows them, and are
// harmless stand-ins when they run (in a test's own directory, which
// holds f, build.sh and "odd name.sh"): every kind of word the hint must
// write back (quotes, parentheses, globs, $'…', unicode, control
// characters, options with values, subcommands, paths, pipelines).
var hintedCommands = []string{
	`python3 -c "print(1)"`,
	`python3 -c 'import os; print(os.getcwd() != "")'`,
	`python3 -c "print('a b')"`,
	`python3 -c 'print("it'\''s")'`,
	`python3 -c "print('!')"`,
	`python3 -c 'import sys; print(sys.argv)' '!x' '$HOME' '` + "`id`" + `' '$(id)' '~'`,
	`python3 -c 'print(r"a\b")' 'x?' 'y[1]' '*' '{a,b}'`,
	`python3 -c '' x`,
	`python3 -c 'print(1)' # a comment`,
	`python3 -u -c 'print("é ü")' café`,
	`python3 -c $'print("tab\there")'`,
	"python3 -c 'import os\nprint(1)'",
	"python3 -c 'x = \"\x1b[2K\"'",
	"python3 -c 'x = \"\u202e\"'",
	`perl -e 'print "$0\n"'`,
	`perl -e 'print "(*) [x] {a,b} ~ #"'`,
	`node -e 'console.log([1,2].map(x => x*2))'`,
	`node -e "process.exit(0)" -- a`,
	"node -e 'let s = `t${1}`; console.log(s)'",
	`touch 'a b' 'c (d)'`,
	`mkdir -p "dir (copy)/x"`,
	`sed -i 's/a*/b/' f`,
	`sed -i.bak -e 's/(x)/y/' f`,
	`./build.sh --fast`,
	`'./odd name.sh' x`,
	`git -c user.name=A init -q 'repo (1)'`,
	`git -c 'user.name=A B' -c user.email=a@b.c init -q r2`,
	`go build -o 'bin (x)' ./nonexistent`,
	`timeout 5 python3 -c "exit()"`,
	`env LC_ALL=C python3 -c 'import os; print(os.environ["LC_ALL"])'`,
	`mkdir a && python3 -c "print(1)" | tee 'o (1).txt'`,
	`python3 -c 'print(1)' > 'out (1).txt'`,
}

// hintDir makes a directory with the files hintedCommands use.
func hintDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"f": "a(x)\n", "build.sh": "#!/bin/sh\necho built\n", "odd name.sh": "#!/bin/sh\necho odd\n"} {
		if err := proctest.WriteProgram(filepath.Join(dir, name), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRunHintsWork: for each command, the hint given where nobody can be
// asked is followed as printed, as flags and (a third of the table) as the
// configuration file's strings, and the command then runs. The hints come
// from one server session; the commands run with the hints as flags in
// one session, and as the configuration's strings in another, for each
// group of commands that no other command's hint of the group allows any
// part of (checked here first), so that each runs by its own hint alone:
// nine starts of the server rather than one for each command and way.
func TestRunHintsWork(t *testing.T) {
	t.Parallel()
	if len(hintedCommands) < 30 {
		t.Fatalf("%d commands: the table should hold at least 30", len(hintedCommands))
	}
	ask := []string{"--sandbox=off", "--deny", "rm -rf", "--default", "ask"}
	cs := hintSession(t, ask...)
	hints := make([]hint, len(hintedCommands))
	for i, cmd := range hintedCommands {
		out := callText(t, cs, "bash", map[string]any{"command": cmd, "description": "a hinted command"})
		flags, strs := parseHint(t, out)
		if !strings.Contains(out, unapproved) || len(flags) == 0 {
			t.Fatalf("%s: no hint: %q", cmd, out)
		}
		hints[i] = hint{cmd: cmd, flags: flags, strs: strs, config: i%3 == 0}
	}
	for _, group := range hintGroups(t, hints) {
		args := slices.Clone(ask)
		var strs []string
		var configured []hint
		for _, h := range group {
			for _, f := range h.flags {
				args = append(args, "--allow", f)
			}
			if h.config {
				strs = append(strs, h.strs...)
				configured = append(configured, h)
			}
		}
		runHinted(t, "with the flags", group, args...)
		if len(configured) == 0 {
			continue
		}
		cfg := filepath.Join(t.TempDir(), "config.json")
		os.WriteFile(cfg, []byte(`{"permissions": {"deny": ["rm -rf"], "default": "ask", "allow": [`+strings.Join(strs, ", ")+`]}}`), 0o600)
		runHinted(t, "with the configuration's strings", configured, "--sandbox=off", "--config", cfg)
	}
}

// unapproved begins the text of a command that did not run for want of
// the user's approval.
const unapproved = "this command needs the user's approval"

// A hint is what the denial of cmd said to allow: flags' arguments and
// the configuration's JSON strings. The command runs allowed by the
// flags, and where config is set (a third of the table: each run costs
// a start of its program) by the configuration's strings too.
type hint struct {
	cmd         string
	flags, strs []string
	config      bool
}

// hintSession is a dsh-bash mcp server started with args in a directory
// of hintDir's, for a client that cannot ask the user.
func hintSession(t *testing.T, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := execCommand(append([]string{"mcp"}, args...)...)
	cmd.Dir = hintDir(t)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	cs, _ := connectMCP(t, cmd, "", nil)
	return cs
}

// runHinted runs each command of group in one server started with args,
// and fails the test where one did not run.
func runHinted(t *testing.T, how string, group []hint, args ...string) {
	t.Helper()
	cs := hintSession(t, args...)
	for _, h := range group {
		if out := callText(t, cs, "bash", map[string]any{"command": h.cmd, "description": "a hinted command"}); strings.Contains(out, unapproved) {
			t.Errorf("%s: %s %q: %q", h.cmd, how, h.flags, out)
		}
	}
}

// hintGroups puts the commands into groups where no command's hints, as
// allow rules, take any part of another's from what needs approval: in a
// server allowing the group's hints, each command runs by its own alone.
func hintGroups(t *testing.T, hints []hint) [][]hint {
	t.Helper()
	var groups [][]hint
next:
	for _, h := range hints {
		for i, g := range groups {
			if !slices.ContainsFunc(g, func(o hint) bool { return allowsPart(t, o, h) || allowsPart(t, h, o) }) {
				groups[i] = append(g, h)
				continue next
			}
		}
		groups = append(groups, []hint{h})
	}
	return groups
}

// allowsPart says whether o's hints, as allow rules, leave less of h's
// command needing approval than no rule does.
func allowsPart(t *testing.T, o, h hint) bool {
	t.Helper()
	p := &permission.Policy{Unmatched: permission.Ask, ReadOnly: true}
	before := p.Check(h.cmd, "/w", "/w")
	rules, err := permission.NewRules(permission.Allow, "hint", o.flags...)
	if err != nil {
		t.Fatalf("%s: the hints %q: %v", o.cmd, o.flags, err)
	}
	p.Rules = rules
	after := p.Check(h.cmd, "/w", "/w")
	return after.Decision != before.Decision || !slices.Equal(after.Prefixes, before.Prefixes)
}

// parseHint reads a denial's hints as a user would copy them: the word
// after each "--allow ", read by a shell, and the JSON string after each
// "or add " as the configuration file holds it.
func parseHint(t *testing.T, text string) (flags, jsons []string) {
	t.Helper()
	const flag, add = "start dsh-bash with --allow ", " or add "
	for _, part := range strings.Split(text, flag)[1:] {
		word, rest := firstWord(t, part)
		fields, err := shell.Fields(word, nil)
		if err != nil || len(fields) != 1 {
			t.Fatalf("the flag's argument %s reads as %q (%v)", word, fields, err)
		}
		flags = append(flags, fields[0])
		if !strings.HasPrefix(rest, add) {
			t.Fatalf("no %q after the flag: %q", add, rest)
		}
		d := json.NewDecoder(strings.NewReader(rest[len(add):]))
		var raw json.RawMessage
		var s string
		if err := d.Decode(&raw); err != nil || json.Unmarshal(raw, &s) != nil || s != fields[0] {
			t.Fatalf("the configuration's string %s (%v) is not the flag's %q", raw, err, fields[0])
		}
		jsons = append(jsons, string(raw))
	}
	return flags, jsons
}

// firstWord is s's first shell word, as written, and what follows it.
func firstWord(t *testing.T, s string) (word, rest string) {
	t.Helper()
	for w, err := range syntax.NewParser().WordsSeq(strings.NewReader(s)) {
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		end := w.End().Offset()
		return s[:end], s[end:]
	}
	t.Fatalf("no word in %q", s)
	return "", ""
}
