package setup

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/dshgo/dsh/permission"
)

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

// TestHowToAllowQuotes: the flag's argument is one word for bash that is
// the pattern, and the configuration's string decodes to it.
func TestHowToAllowQuotes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip(err)
	}
	home := t.TempDir()
	for _, words := range [][]string{
		{"mkdir"}, {"sed", "-i"}, {"python3", "-c", "print(1)"}, {"python3", "-c", "print('a')"},
		{"python3", "-c", `print("$x")`}, {"python3", "-c", "'!'"}, {"node", "-e", "`x`"},
		{"perl", "-e", `print "\n"`}, {"python3", "-c", "a\nb\x1b\u202e"}, {"x", "*", "!y", "<&>", "é"},
		{"x", "$HOME"}, {"x", "`id`"}, {"x", "a!b"}, {"x", "(\\)"}, {"x", "!"},
	} {
		pattern := permission.Pattern(words)
		hint := howToAllow(pattern, "/cfg.json")
		arg, _ := firstWord(t, strings.TrimPrefix(hint, "start dsh-bash with --allow "))
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", `printf '%s\0' `+arg)
		cmd.Dir, cmd.Env = home, []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		out, err := cmd.Output()
		if err != nil || string(out) != pattern+"\x00" {
			t.Errorf("%q: bash reads %s as %q (%v), want %q", words, arg, out, err, pattern)
		}
		var s string
		if err := json.Unmarshal([]byte(jsonString(pattern)), &s); err != nil || s != pattern {
			t.Errorf("%q: the JSON string %s is %q (%v)", words, jsonString(pattern), s, err)
		}
	}
	if got := howToAllow(`python3 -c 'print(1)'`, "/cfg.json"); got != `start dsh-bash with --allow "python3 -c 'print(1)'" or add "python3 -c 'print(1)'" to "permissions": {"allow": […]} in /cfg.json` {
		t.Errorf("the hint: %s", got)
	}
}
