package permission

import (
	"slices"
	"strings"
	"testing"
)

// hintCommands are commands no rule allows, with what the hint offers: of
// every kind of word a command holds (quotes, parentheses, globs, $'…',
// unicode, control characters, options with values, subcommands, paths).
// Every one of them is a harmless stand-in: the binary's test runs some.
var hintCommands = []struct {
	cmd      string
	prefixes []string
}{
	{`python3 -c "print(1)"`, []string{`python3 -c 'print(1)'`}},
	{`python3 -c 'import os'`, []string{`python3 -c 'import os'`}},
	{`python3 -c "print('a b')"`, []string{`python3 -c 'print('\''a b'\'')'`}},
	{`python3 -u -i -q`, []string{`python3 -u -i -q`}},
	{`python3 script.py --out x`, []string{`python3 script.py`}},
	{`node -e 'console.log([1,2].map(x => x*2))'`, []string{`node -e 'console.log(\[1,2].map(x => x\*2))'`}},
	{`node -e "process.exit(0)" -- a`, []string{`node -e 'process.exit(0)' -- a`}},
	{`perl -e 'print "$0\n"'`, []string{`perl -e 'print "$0\\n"'`}},
	{`ruby -e 'puts 1;puts 2'`, []string{`ruby -e 'puts 1;puts 2'`}},
	{`bash script.sh`, []string{`bash script.sh`}},
	{`sed -i 's/a*/b/' f`, []string{`sed -i`}},
	{`sed -i.bak -e 's/(x)/y/' f`, []string{`sed -i.bak -e`}},
	{`touch 'a b'`, []string{`touch`}},
	{`mkdir -p "dir (copy)"`, []string{`mkdir -p`}},
	{`git -c user.name=A commit -m 'fix (#1)'`, []string{`git -c user.name=A commit -m`}},
	{`git -c 'user.name=A B' commit -m x`, []string{`git -c 'user.name=A B' commit -m`}},
	{`git --no-pager -c core.pager=cat log --output=x`, []string{`git -c core.pager=cat log --output=x`}},
	{`npm run 'build:prod'`, []string{`npm run`}},
	{`npm install --save-dev left-pad`, []string{`npm install --save-dev`}},
	{`go build -o bin/app ./cmd/app`, []string{`go build -o`}},
	{`go test -run 'Test(A|B)' ./...`, []string{`go test -run`}},
	{`cargo build --features "a b"`, []string{`cargo build --features`}},
	{`docker run --rm -e 'A=b c' alpine`, []string{`docker run --rm -e`}},
	{`curl -H 'Authorization: x' https://example.invalid`, []string{`curl -H`}},
	{`./build.sh --fast`, []string{`./build.sh --fast`}},
	{`/usr/bin/python3 -c 'print("é")'`, []string{`/usr/bin/python3 -c 'print("é")'`}},
	{`'./odd name.sh' x`, []string{`'./odd name.sh'`}},
	{`python3 -c 'print("ü")' café`, []string{`python3 -c 'print("ü")' 'café'`}},
	{`python3 -c '# comment'`, []string{`python3 -c '# comment'`}},
	{`python3 -c '~'`, []string{`python3 -c '~'`}},
	{`python3 -c '*'`, []string{`python3 -c '\*'`}},
	{`python3 -c '!x' '!y'`, []string{`python3 -c '\!x' '\!y'`}},
	{`python3 -c '' x`, []string{`python3 -c '' x`}},
	{`python3 -c '{a,b}' '$HOME' '$(id)' '` + "`id`" + `'`, []string{`python3 -c '{a,b}' '$HOME' '$(id)' '` + "`id`" + `'`}},
	{`python3 -c 'a\b' 'x?' 'y[1]'`, []string{`python3 -c 'a\\b' 'x\?' 'y\[1]'`}},
	{"python3 -c 'import os\nprint(1)'", []string{`python3 -c $'import os\nprint(1)'`}},
	{"python3 -c 'x\x1b[2K\ty'", []string{`python3 -c $'x\x1b\\[2K\ty'`}},
	{"python3 -c 'a\u202eb' 'it'\\''s'", []string{`python3 -c $'a\u202eb' 'it'\''s'`}},
	{"python3 -c 'a\u200bb\U000e0041'", []string{`python3 -c $'a\u200bb\U000e0041'`}},
	{`timeout 5 python3 -c "exit()"`, []string{`python3 -c 'exit()'`}},
	{`mkdir a && python3 -c "print(1)" | tee 'o (1).txt'`, []string{`mkdir`, `python3 -c 'print(1)'`, `tee`}},
	{`make -j4 'all'`, []string{`make -j4 all`}},
	{`kubectl -n 'my ns' get pods`, []string{`kubectl -n 'my ns' get`}},
}

// TestHintsAreRules: every prefix a verdict offers is a rule's pattern
// that parses, that matches the command it was offered for, and that,
// allowed, lets it run.
func TestHintsAreRules(t *testing.T) {
	if len(hintCommands) < 30 {
		t.Fatalf("%d commands: the table should hold at least 30", len(hintCommands))
	}
	for _, tt := range hintCommands {
		p := &Policy{Unmatched: Ask, Home: "/home/u"}
		v := p.Check(tt.cmd, "/w", "/w")
		if v.Decision != Ask || !slices.Equal(v.Prefixes, tt.prefixes) {
			t.Errorf("%q: %v (%s), prefixes %q; want ask, %q", tt.cmd, v.Decision, v.Reason, v.Prefixes, tt.prefixes)
			continue
		}
		for _, pattern := range v.Prefixes {
			r, err := NewRule(Allow, pattern, "hint")
			if err != nil {
				t.Errorf("%q: the hint %q does not parse: %v", tt.cmd, pattern, err)
				continue
			}
			p.Rules = append(p.Rules, r)
		}
		if v := p.Check(tt.cmd, "/w", "/w"); v.Decision != Allow {
			t.Errorf("%q: allowed %q, it is %v (%s)", tt.cmd, v.Prefixes, v.Decision, v.Reason)
		}
	}
}

// TestHintsMatchOnlyTheirWords: a hint's words match themselves, not what
// they would match as globs or exclusions.
func TestHintsMatchOnlyTheirWords(t *testing.T) {
	for _, tt := range []struct{ hinted, other string }{
		{`python3 -c '*'`, `python3 -c 'import os'`},
		{`python3 -c 'x?'`, `python3 -c 'xy'`},
		{`python3 -c 'y[1]'`, `python3 -c 'y1'`},
		{`python3 -c '!x' y`, `python3 -c 'z' y`},
		{`./build.sh`, `./other.sh`},
		{`'./odd name.sh'`, `./odd`},
	} {
		p := &Policy{Unmatched: Ask}
		hint := p.Check(tt.hinted, "/w", "/w").Prefixes
		for _, pattern := range hint {
			r, err := NewRule(Allow, pattern, "hint")
			if err != nil {
				t.Fatalf("%q: %v", pattern, err)
			}
			p.Rules = append(p.Rules, r)
		}
		if v := p.Check(tt.other, "/w", "/w"); v.Decision != Ask {
			t.Errorf("the hint %q for %q allows %q", hint, tt.hinted, tt.other)
		}
	}
}

// TestQuoteWord: a word is quoted only where it needs to be, and read back
// by the shell's rules as itself.
func TestQuoteWord(t *testing.T) {
	for _, tt := range []struct{ word, want string }{
		{"git", "git"},
		{"--opt=a,b:c@d%e+f/g.h_i-j", "--opt=a,b:c@d%e+f/g.h_i-j"},
		{"", "''"},
		{"a b", "'a b'"},
		{"print(1)", "'print(1)'"},
		{"it's", `'it'\''s'`},
		{"é", "'é'"},
		{"a\nb", `$'a\nb'`},
		{"a'\\\x7f", `$'a\'\\\x7f'`},
		{"bad\xffbyte\u00e9", `$'bad\xffbyteé'`},
	} {
		if got := QuoteWord(tt.word); got != tt.want {
			t.Errorf("QuoteWord(%q) = %s, want %s", tt.word, got, tt.want)
		}
		words, err := splitPattern(QuoteWord(tt.word))
		if err != nil || len(words) != 1 || words[0] != tt.word {
			t.Errorf("QuoteWord(%q) reads back as %q (%v)", tt.word, words, err)
		}
	}
	if got := Pattern([]string{"a*", "!b", "c"}); got != `'a\*' '\!b' c` {
		t.Errorf("Pattern: %s", strings.TrimSpace(got))
	}
}
