package permission

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestExecRulesRefuse: a deny rule refuses a program however it is named
// when it runs: its path, its argv[0], a link or copy of it, the script
// an interpreter runs, git's options before the subcommand.
func TestExecRulesRefuse(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	execRulesMkdir(t, bin)
	zap := filepath.Join(bin, "zap")
	execRulesWrite(t, zap, "\x7fELF zap's own bytes")
	execRulesWrite(t, filepath.Join(dir, "copy"), "\x7fELF zap's own bytes")
	execRulesWrite(t, filepath.Join(dir, "other"), "\x7fELF zap's bytes too")
	if err := os.Link(zap, filepath.Join(dir, "hard")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(zap, filepath.Join(dir, "ls")); err != nil {
		t.Fatal(err)
	}
	e, err := NewExecRules([]string{"zap", "git push --force", "rm -rf"}, bin)
	if err != nil {
		t.Fatal(err)
	}
	prog := func(path string, argv ...string) ExecProgram {
		p := ExecProgram{Path: path, Argv: argv, Cwd: func() string { return dir }}
		var st syscall.Stat_t
		if syscall.Stat(path, &st) == nil {
			p.Dev, p.Ino, p.Size = uint64(st.Dev), st.Ino, st.Size
			p.Open = func() (io.ReadCloser, error) { return os.Open(path) }
		}
		return p
	}
	tests := []struct {
		name string
		p    ExecProgram
		want string // the pattern of the refusing rule; empty: none
	}{
		{"by-path", prog(zap, "zap"), "zap"},
		{"argv0-lies", prog(zap, "innocent", "x"), "zap"},
		{"argv0-names-it", prog("/bin/busybox", "zap", "x"), "zap"},
		{"hard-link", prog(filepath.Join(dir, "hard"), "./hard"), "zap"},
		{"copy", prog(filepath.Join(dir, "copy"), "./copy"), "zap"},
		{"same-size-other-bytes", prog(filepath.Join(dir, "other"), "./other"), ""},
		{"script", prog("/bin/sh", "/bin/sh", zap, "x"), "zap"},
		{"loader", prog("/usr/lib64/ld-linux-x86-64.so.2", "/lib64/ld-linux-x86-64.so.2", zap, "x"), "zap"},
		{"loader-options", prog("/lib/ld-linux-aarch64.so.1", "ld.so", "--argv0", "ls", "--library-path", "/l", "./copy"), "zap"},
		{"loader-link", prog("/lib/ld-musl-x86_64.so.1", "ld", "--", "./ls"), "zap"},
		{"loader-list", prog("/lib64/ld-linux-x86-64.so.2", "ld", "--list", "/bin/ls"), ""},
		{"script-by-link", prog("/bin/sh", "/bin/sh", "ls"), "zap"},
		{"script-by-path-link", prog("/bin/sh", "/bin/sh", filepath.Join(dir, "ls"), "-l"), "zap"},
		{"script-copy", prog("/bin/sh", "sh", "./copy"), "zap"},
		{"script-other", prog("/bin/sh", "sh", "./other"), ""},
		{"script-with-option", prog("/usr/bin/python3.11", "python3", "-u", zap), "zap"},
		{"env-shebang", prog("/usr/bin/env", "/usr/bin/env", "node", "/usr/bin/zap", "run"), "zap"},
		{"git-plain", prog("/usr/bin/git", "git", "push", "--force"), "git push --force"},
		{"git-options-before", prog("/usr/bin/git", "git", "-C", "/x", "-c", "a=b", "--git-dir", "/g", "--no-pager", "push", "-f"), "git push --force"},
		{"git-attached-options", prog("/usr/bin/git", "git", "--git-dir=/g", "--work-tree=/w", "push", "--force-with-lease", "--force"), "git push --force"},
		{"git-push-plain", prog("/usr/bin/git", "git", "push"), ""},
		{"git-status", prog("/usr/bin/git", "git", "-c", "push", "status"), ""},
		{"rm-spelled", prog("/usr/bin/rm", "rm", "-r", "-f", "d"), "rm -rf"},
		{"rm-clustered", prog("/usr/bin/rm", "rm", "-fr", "d"), "rm -rf"},
		{"rm-long", prog("/usr/bin/rm", "rm", "--recursive", "--force", "d"), "rm -rf"},
		{"rm-plain", prog("/usr/bin/rm", "rm", "d"), ""},
		{"ls", prog("/usr/bin/ls", "ls", "-l"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if r := e.Refuse(tc.p); r != nil {
				got = r.Pattern
			}
			if got != tc.want {
				t.Errorf("Refuse(%q at %s) = %q, want %q", tc.p.Argv, tc.p.Path, got, tc.want)
			}
		})
	}
	// A copy of the system's loader under another name is a loader too.
	if lds, _ := filepath.Glob("/lib*/ld-linux*.so*"); len(lds) > 0 {
		b, err := os.ReadFile(lds[0])
		if err != nil {
			t.Fatal(err)
		}
		execRulesWrite(t, filepath.Join(dir, "x"), string(b))
		if r := e.Refuse(prog(filepath.Join(dir, "x"), "./x", zap, "y")); r == nil || r.Pattern != "zap" {
			t.Errorf("a copy of %s ran zap unrefused: %v", lds[0], r)
		}
	}
	var none *ExecRules
	if none.Refuse(prog(zap, "zap")) != nil {
		t.Error("nil ExecRules refused")
	}
	if got := strings.Join(e.Patterns(), "|"); got != "zap|git push --force|rm -rf" {
		t.Errorf("Patterns() = %q", got)
	}
	if _, err := NewExecRules([]string{"'unclosed"}, ""); err == nil {
		t.Error("a pattern that does not parse was taken")
	}
}

func execRulesMkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func execRulesWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o755); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRefuse: the exec check's own work for one program it lets
// run (the tracer's stops aside): views, file identity, every rule.
func BenchmarkRefuse(b *testing.B) {
	e, err := NewExecRules([]string{"zap", "git push --force", "rm -rf /", "curl *", "npm publish", "docker run --privileged"}, "/usr/bin:/bin")
	if err != nil {
		b.Fatal(err)
	}
	progs := map[string]ExecProgram{
		"binary": {Path: "/usr/bin/true", Argv: []string{"/bin/true"}, Size: 1},
		"git":    {Path: "/usr/bin/git", Argv: []string{"git", "-C", "x", "status", "--short"}, Size: 1},
		"script": {Path: "/usr/bin/python3.11", Argv: []string{"python3", "/usr/lib/x/tool.py", "-v"}, Size: 1},
	}
	for name, p := range progs {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if e.Refuse(p) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}
