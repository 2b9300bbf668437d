//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRunHintsWork: for each command, the hint printed where nobody can be
// asked is followed as printed, as flags and as the configuration file's
// strings, and the command then runs (some 75 starts).
func TestRunHintsWork(t *testing.T) {
	t.Parallel()
	if len(hintedCommands) < 30 {
		t.Fatalf("%d commands: the table should hold at least 30", len(hintedCommands))
	}
	for i, cmd := range hintedCommands {
		t.Run("", func(t *testing.T) {
			t.Parallel()
			dir := hintDir(t)
			// The hints are the rules', whatever holds the commands: no jail
			// to start for each of the runs.
			out, _, code := dshBash(t, dir, "run", "--sandbox=off", "--deny", "rm -rf", "--default", "ask", "--", cmd)
			flags, strs := parseHint(t, out)
			if code != 1 || len(flags) == 0 {
				t.Fatalf("%s: no hint: %q (exit %d)", cmd, out, code)
			}
			args := []string{"run", "--sandbox=off", "--deny", "rm -rf", "--default", "ask"}
			for _, f := range flags {
				args = append(args, "--allow", f)
			}
			if out, _, code := dshBash(t, dir, append(args, "--", cmd)...); code != 0 || strings.Contains(out, "approval") {
				t.Errorf("%s: with %q: %q (exit %d)", cmd, flags, out, code)
			}
			if i%3 != 0 {
				return // the configuration's strings of a third of the table: each run costs a start of the binary
			}
			cfg := filepath.Join(t.TempDir(), "config.json")
			os.WriteFile(cfg, []byte(`{"permissions": {"deny": ["rm -rf"], "default": "ask", "allow": [`+strings.Join(strs, ", ")+`]}}`), 0o600)
			if out, errOut, code := dshBash(t, hintDir(t), "run", "--sandbox=off", "--config", cfg, "--", cmd); code != 0 || strings.Contains(out, "approval") {
				t.Errorf("%s: with the configuration's allow %s: %q %s (exit %d)", cmd, strs, out, errOut, code)
			}
		})
	}
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
