package audit

import (
	"path"
	"strings"
)

// args applies the rules of a command's words (its name first): NAME=value
// and --name=value words, --name value pairs, and the options of the
// programs that take a password under a short name (programs).
func (s *scrubber) args(words []word) {
	prog := ""
	for i, w := range words {
		if next, ok := subcommands[prog][w.text]; ok {
			prog = next
			continue
		}
		if name := path.Base(w.text); programs[name] != nil || subcommands[name] != nil {
			prog = name
			continue
		}
		s.assignWord(w)
		if i+1 < len(words) && secretOption(w.text) && !strings.HasPrefix(words[i+1].text, "-") {
			s.redactFrom(words[i+1], 0)
		}
		if rule := programs[prog]; rule != nil {
			rule(s, words, i)
		}
	}
}

// assignWord redacts the value of a NAME=value or --name=value word whose
// name is a secret's, to the end of the word (--password="a b"). A NAME=
// in quotes ('TOKEN=x cmd', a string run as a command) is left to the
// text rules, which end the value at a blank.
func (s *scrubber) assignWord(w word) {
	name, _, ok := strings.Cut(w.text, "=")
	if !ok || strings.IndexFunc(name, func(r rune) bool { return r > 0x7f || !isNameByte(byte(r)) }) >= 0 {
		return
	}
	option := strings.HasPrefix(name, "-")
	switch {
	case strings.HasPrefix(name, "--"):
		name = name[2:]
	case strings.HasPrefix(name, "-D"):
		name = name[2:] // Java's -Ddb.password=x
	}
	if !secretName(strings.TrimLeft(name, "-")) || !option && w.quotedAt(len(name)) {
		return
	}
	s.redactFrom(w, strings.IndexByte(w.text, '=')+1)
}

// quotedAt reports whether byte i of w's text is in a quoted piece.
func (w word) quotedAt(i int) bool {
	at := 0
	for _, p := range w.pieces {
		if i < at+len(p.text) {
			return p.quoted
		}
		at += len(p.text)
	}
	return false
}

// isNameByte reports whether c may be part of a variable's or an
// option's name.
func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// secretOption reports whether a word is a --name option, with no value
// in it, whose name is a secret's: its value is the next word.
func secretOption(text string) bool {
	name, ok := strings.CutPrefix(text, "--")
	return ok && name != "" && !strings.ContainsAny(name, "=\x00") && secretName(name)
}

// argRule looks at word i of a command of its program.
type argRule func(s *scrubber, words []word, i int)

// programs are the programs (and subcommands) that take a secret under
// an option or at a place that does not say so by its name.
var programs = map[string]argRule{
	"sshpass":   optionValue(true, "-p"),
	"redis-cli": optionValue(true, "-a"),
	"zip":       optionValue(false, "-P", "--password"),
	"unzip":     optionValue(false, "-P"),
	"7z":        attached("-p"),
	"7za":       attached("-p"),
	"7zr":       attached("-p"),
	"curl":      userPassword(":", "-u", "--user", "-U", "--proxy-user"),
	"smbclient": userPassword("%", "-U", "--user"),
	"htpasswd":  htpasswd,

	"registry login":        optionValue(true, "-p"),
	"vault login":           positional,
	"aws configure set":     namedValue,
	"gh secret set":         optionValue(false, "-b", "--body"),
	"kubectl create secret": fromLiteral,
}

// subcommands lead from a program to the subcommand that takes a secret:
// docker login, helm registry login, vault login, aws configure set, gh
// secret set, kubectl create secret.
var subcommands = map[string]map[string]string{
	"docker": {"login": "registry login"}, "podman": {"login": "registry login"},
	"nerdctl": {"login": "registry login"}, "buildah": {"login": "registry login"},
	"skopeo": {"login": "registry login"}, "oras": {"login": "registry login"},
	"helm": {"registry": "helm registry"}, "helm registry": {"login": "registry login"},
	"vault": {"login": "vault login"},
	"aws":   {"configure": "aws configure"}, "aws configure": {"set": "aws configure set"},
	"gh": {"secret": "gh secret"}, "gh secret": {"set": "gh secret set"},
	"kubectl": {"create": "kubectl create"}, "oc": {"create": "kubectl create"},
	"kubectl create": {"secret": "kubectl create secret"},
}

func init() {
	for _, name := range []string{"mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck",
		"mysqlpump", "mysqlbinlog", "mysqlsh", "mariadb", "mariadb-dump", "mariadb-admin", "mariadb-import",
		"mariadb-show", "mariadb-check", "mariadb-binlog"} {
		programs[name] = attached("-p") // -p alone asks; -p NAME is a database
	}
}

// optionValue redacts the value of an option named opts (a short name,
// and the long one if any): the next word, --long=VALUE, or, where glued
// is set, what follows a short name in its own word (-pVALUE).
func optionValue(glued bool, opts ...string) argRule {
	return func(s *scrubber, words []word, i int) {
		t := words[i].text
		for _, opt := range opts {
			switch {
			case t == opt:
				if i+1 < len(words) {
					s.redactFrom(words[i+1], 0)
				}
			case strings.HasPrefix(opt, "--") && strings.HasPrefix(t, opt+"="):
				s.redactFrom(words[i], len(opt)+1)
			case glued && len(opt) == 2 && len(t) > 2 && strings.HasPrefix(t, opt) && !strings.HasPrefix(t, "--"):
				s.redactFrom(words[i], 2)
			default:
				continue
			}
			return
		}
	}
}

// attached redacts what follows opt in its own word (mysql -pSECRET).
func attached(opt string) argRule {
	return func(s *scrubber, words []word, i int) {
		if t := words[i].text; len(t) > len(opt) && strings.HasPrefix(t, opt) && !strings.HasPrefix(t, "--") {
			s.redactFrom(words[i], len(opt))
		}
	}
}

// userPassword redacts the password of a user option's USER<sep>PASSWORD
// value: the next word, --user=VALUE, or -uVALUE.
func userPassword(sep string, opts ...string) argRule {
	return func(s *scrubber, words []word, i int) {
		t := words[i].text
		for _, opt := range opts {
			w, from := words[i], -1
			switch {
			case t == opt && i+1 < len(words):
				w, from = words[i+1], 0
			case strings.HasPrefix(t, opt+"="):
				from = len(opt) + 1
			case len(opt) == 2 && len(t) > 2 && strings.HasPrefix(t, opt):
				from = 2
			}
			if from < 0 {
				continue
			}
			if at := strings.Index(w.text[from:], sep); at >= 0 {
				s.redactFrom(w, from+at+len(sep))
			}
			return
		}
	}
}

// htpasswd -b takes the password as its last argument.
func htpasswd(s *scrubber, words []word, i int) {
	if i != len(words)-1 || i < 2 || strings.HasPrefix(words[i].text, "-") {
		return
	}
	for _, w := range words[:i] {
		if strings.HasPrefix(w.text, "-") && !strings.HasPrefix(w.text, "--") && strings.Contains(w.text, "b") {
			s.redactFrom(words[i], 0)
			return
		}
	}
}

// positional redacts an argument that is not an option nor NAME=value
// (vault login TOKEN).
func positional(s *scrubber, words []word, i int) {
	if t := words[i].text; !strings.HasPrefix(t, "-") && !strings.Contains(t, "=") {
		s.redactFrom(words[i], 0)
	}
}

// namedValue redacts the word after one with a secret's name (aws
// configure set aws_secret_access_key VALUE).
func namedValue(s *scrubber, words []word, i int) {
	if i+1 < len(words) && secretName(words[i].text) {
		s.redactFrom(words[i+1], 0)
	}
}

// fromLiteral redacts the values of kubectl create secret's
// --from-literal=KEY=VALUE, whatever the key.
func fromLiteral(s *scrubber, words []word, i int) {
	w := words[i]
	switch {
	case strings.HasPrefix(w.text, "--from-literal="):
		if at := strings.IndexByte(w.text[len("--from-literal="):], '='); at >= 0 {
			s.redactFrom(w, len("--from-literal=")+at+1)
		}
	case w.text == "--from-literal" && i+1 < len(words):
		if at := strings.IndexByte(words[i+1].text, '='); at >= 0 {
			s.redactFrom(words[i+1], at+1)
		}
	}
}
