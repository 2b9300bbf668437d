package audit

import (
	"cmp"
	"slices"
	"strings"

	"github.com/dshgo/dsh/internal/secrets"
)

// Redacted stands in the log for each secret the scrub takes out.
const Redacted = "[REDACTED]"

// ScrubCommand returns a shell command with the secrets it finds replaced
// by [Redacted], the rest as written. Where the command parses (as bash,
// with mvdan.cc/sh), it redacts
//
//   - the values assigned to variables with a secret's name ([secrets.Name]:
//     API_KEY=x cmd, export TOKEN=x, declare, local, readonly), and
//     NAME=value words with such a name (env TOKEN=x, docker run -e,
//     --from-literal=password=x);
//   - the values of options with such a name: --password=x,
//     --token x, --api-key 'x' (but not --token-file PATH, --no-password
//     or --password-stdin);
//   - the options of programs that take a password under a short name:
//     mysql -pSECRET (and the other MySQL and MariaDB clients), sshpass
//     -p, redis-cli -a, curl -u user:PASSWORD, docker (podman, helm…)
//     login -p, zip and unzip -P, 7z -pSECRET, smbclient -U user%PASSWORD,
//     htpasswd -b, vault login TOKEN, aws configure set NAME VALUE, gh
//     secret set --body, kubectl create secret --from-literal;
//   - in every literal piece of text (quoted strings, here-documents,
//     comments, the strings of bash -c and eval, parsed again): what
//     [ScrubText] redacts.
//
// Where it does not parse, ScrubText's rules apply to the whole command.
// An expansion ($TOKEN, $(cat file)) is kept: it names where a secret
// comes from, not the secret. This is pattern matching, and best effort:
// a secret written where no rule looks (a positional argument of a
// program not listed) is kept.
func ScrubCommand(command string) string {
	s := &scrubber{src: command}
	if !s.shell(command, 0, 0) {
		s.text(piece{text: command, end: len(command), exact: true}, true)
	}
	return s.apply()
}

// ScrubText returns free text (a description, an error) with the secrets
// it finds replaced by [Redacted]: passwords in URLs
// (https://user:PASSWORD@host, and the user of an http(s) URL, which is
// often a token), the values of headers with a secret's name at the start
// of a line or string (Authorization: Bearer TOKEN keeps its scheme,
// Cookie:, X-Api-Key:, password: in YAML), NAME=value and
// "name": "value" pairs with a secret's name (in .env files, query
// strings, JSON), bearer tokens, openssl's pass:SECRET, the bodies of
// PEM private keys, the tokens whose shape is known (GitHub, GitLab,
// OpenAI, Anthropic, Slack, AWS access key ids, Google API keys, npm,
// Hugging Face, Stripe, JWTs), and --option value pairs with a secret's
// name.
func ScrubText(text string) string {
	s := &scrubber{src: text}
	s.text(piece{text: text, end: len(text), exact: true}, true)
	return s.apply()
}

// ScrubArgv returns argv, a program's arguments, with the secrets that
// ScrubCommand would find in the same words redacted (argv itself is
// left alone).
func ScrubArgv(argv []string) []string {
	if len(argv) == 0 {
		return argv
	}
	src := strings.Join(argv, "\x00") // no argument holds a NUL
	s := &scrubber{src: src}
	words := make([]word, len(argv))
	off := 0
	for i, a := range argv {
		p := piece{text: a, off: off, end: off + len(a), exact: true, quoted: strings.ContainsAny(a, " \t\n")}
		words[i] = word{text: a, pieces: []piece{p}}
		s.text(p, false)
		if strings.ContainsAny(a, " \t\n") {
			s.shell(a, off, 1)
		}
		off += len(a) + 1
	}
	s.args(words)
	return strings.Split(s.apply(), "\x00")
}

// scrubber collects the spans of src to redact.
type scrubber struct {
	src   string
	spans []span
}

// span is a range [from, to) of the source.
type span struct{ from, to int }

func (s *scrubber) add(from, to int) {
	if from < to {
		s.spans = append(s.spans, span{from, to})
	}
}

// apply returns the source with each span (merged where they overlap or
// touch) replaced by Redacted.
func (s *scrubber) apply() string {
	if len(s.spans) == 0 {
		return s.src
	}
	slices.SortFunc(s.spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	var b strings.Builder
	at := 0
	for i := 0; i < len(s.spans); {
		from, to := s.spans[i].from, s.spans[i].to
		for i++; i < len(s.spans) && s.spans[i].from <= to; i++ {
			to = max(to, s.spans[i].to)
		}
		if from < at {
			from = at
		}
		b.WriteString(s.src[at:from])
		b.WriteString(Redacted)
		at = to
	}
	b.WriteString(s.src[at:])
	return b.String()
}

// pathSuffixes end names whose value is a path or a switch, not a secret:
// --token-file PATH, PASSWORD_FILE=/run/secrets/db, --password-stdin.
var pathSuffixes = []string{"FILE", "FILES", "PATH", "PATHS", "DIR", "FD", "STDIN", "PROMPT"}

// secretName reports whether name (of a variable, an option without its
// dashes, a header, a JSON key) names a secret, by the rules of
// secrets.Name, with '-' and '.' as '_', but for names of a path or a
// switch (pathSuffixes) and negations (no-password).
func secretName(name string) bool {
	n := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name))
	if n == "" || strings.HasPrefix(n, "NO_") {
		return false
	}
	if i := strings.LastIndexByte(n, '_'); i >= 0 && slices.Contains(pathSuffixes, n[i+1:]) {
		return false
	}
	return secrets.Name(n)
}
