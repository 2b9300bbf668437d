package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// attack3Bypasses: the shell-level bypasses of issue 18, each confirmed
// with bash 5.2 and a stand-in program that leaves a marker (see
// cmd/dsh-bash's TestBypassesNeverRun, which runs them).
var attack3Bypasses = []attackCase{
	// Keyword mode: NAME=VALUE words after the command name set its
	// environment.
	{"set-k", "set -k; git diff GIT_EXTERNAL_DIFF=./x", Ask, "git diff runs ./x for each changed file", "words after the name were read as arguments"},
	{"set-ek", "set -ek; git diff GIT_EXTERNAL_DIFF=./x", Ask, "as above", ""},
	{"set-o-keyword", "set -o keyword; git diff GIT_EXTERNAL_DIFF=./x", Ask, "as above", ""},
	{"shopt-so-keyword", "shopt -so keyword; git diff GIT_EXTERNAL_DIFF=./x", Ask, "as above", ""},
	{"bash-kc", "bash -kc 'git diff GIT_EXTERNAL_DIFF=./x'", Ask, "as above, in a new shell", ""},
	{"set-k-later-function", "f() { git diff GIT_EXTERNAL_DIFF=./x; }; set -k; f", Ask, "the function runs after set -k", ""},
	{"set-k-in-pieces", "f() { git diff GIT_EXTERNAL_DIFF=./x; }; eval 'se''t -k'; f", Ask, "the eval string is set -k", ""},
	{"set-k-in-pieces-then", "eval 'se''t -k'; git diff GIT_EXTERNAL_DIFF=./x", Ask, "as above", ""},
	{"set-k-dynamic-value", "set -k; git diff GIT_EXTERNAL_DIFF=$X", Ask, "as above, the value from a variable", ""},
	{"set-dynamic", "set -$o; git diff GIT_EXTERNAL_DIFF=./x", Ask, "$o may hold k", ""},
	// Network connections through bash's /dev/tcp.
	{"dev-tcp-in", "cat < /dev/tcp/127.0.0.1/9", Ask, "bash connects", "only output redirections were checked"},
	{"dev-udp-in", "cat < /dev/udp/127.0.0.1/9", Ask, "as above", ""},
	{"dev-tcp-inout", "cat 0<> /dev/tcp/127.0.0.1/9", Ask, "as above", ""},
	{"dev-tcp-dynamic", "cat < \"$target\"", Ask, "$target may be /dev/tcp/…", ""},
	{"dev-tcp-escaped", "cat < \\/dev/tcp/$host/80", Ask, "the backslash escapes nothing special", ""},
	{"dev-tcp-quoted-host", "cat < /dev/tcp/\"$host\"/80", Ask, "as above", ""},
}

// attack3Handled: what must stay as it is.
var attack3Handled = []attackCase{
	{"no-keyword-mode", "git diff GIT_EXTERNAL_DIFF=./x", Allow, "without keyword mode the word is a pathspec", ""},
	{"assignment-before-name", "GIT_EXTERNAL_DIFF=./x git diff", Ask, "", ""},
	{"input-file", "cat < go.mod", Allow, "", ""},
	{"input-absolute", "cat < /etc/hostname", Allow, "", ""},
	{"input-dev-null", "cat < /dev/null", Allow, "", ""},
	{"input-literal-prefix", "cat < \"src/$name\"", Allow, "a relative name cannot be /dev/tcp", ""},
}

// attack3Policy is testPolicy with the built-in tables, which allow set
// and shopt.
func attack3Policy(t *testing.T) *Policy {
	p := testPolicy(t)
	p.ReadOnly = true
	return p
}

func TestAttack3(t *testing.T) { runAttack(t, attack3Policy(t), attack3Bypasses) }

// TestAttack3Handled: exactly the decision each must get.
func TestAttack3Handled(t *testing.T) {
	p := attack3Policy(t)
	for _, tt := range attack3Handled {
		if v := p.Check(tt.cmd, "/w", "/w"); v.Decision != tt.want {
			t.Errorf("%s: Check(%q) = %v (%s), want %v", tt.name, tt.cmd, v.Decision, v.Reason, tt.want)
		}
	}
}

// TestWriteThroughLink: a redirection to a link in the workspace that
// points outside it is asked about, as the shell would open the target;
// a link within the workspace, a dangling link outside and a directory
// link on the way are resolved too.
func TestWriteThroughLink(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	os.Symlink(filepath.Join(outside, "target"), filepath.Join(ws, "out-link")) // dangling, outside
	os.WriteFile(filepath.Join(outside, "exists"), nil, 0o644)
	os.Symlink(filepath.Join(outside, "exists"), filepath.Join(ws, "out-file"))  // existing file outside
	os.Symlink(outside, filepath.Join(ws, "out-dir"))                            // a directory outside
	os.Symlink("inside", filepath.Join(ws, "in-link"))                           // within the workspace
	os.Symlink("../"+filepath.Base(ws)+"/in2", filepath.Join(ws, "in-relative")) // relative, back in
	p := testPolicy(t)
	for _, tt := range []struct {
		cmd  string
		want Decision
	}{
		{"echo x > out-link", Ask},
		{"cat go.mod >> out-file", Ask},
		{"echo x > out-dir/new", Ask},
		{"echo x > " + filepath.Join(ws, "out-dir", "new"), Ask},
		{"echo x > in-link", Allow},
		{"echo x > in-relative", Allow},
		{"echo x > plain-new-file", Allow},
		{"echo x > sub/dir/new", Allow},
	} {
		if v := p.Check(tt.cmd, ws, ws); v.Decision != tt.want {
			t.Errorf("Check(%q) = %v (%s), want %v", tt.cmd, v.Decision, v.Reason, tt.want)
		}
	}
}
