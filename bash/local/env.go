package local

import (
	"regexp"
	"slices"
	"strings"
)

// secretName matches environment variable names that look like credentials.
var secretName = regexp.MustCompile(`(?i)KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL`)

// shellStartup names variables that make a non-interactive bash read a file
// before the command; they would undo "no rc files".
var shellStartup = []string{"BASH_ENV", "ENV"}

// overrides keep programs from paging, colouring or prompting.
var overrides = []string{
	"NO_COLOR=1",
	"TERM=dumb",
	"PAGER=cat",
	"GIT_PAGER=cat",
	"GIT_TERMINAL_PROMPT=0",
}

// commandEnv builds the environment of every command: base minus
// credential-shaped names (except those in allow) and shell start-up files,
// then the overrides, then extra. Later entries win.
func commandEnv(base, allow, extra []string) []string {
	env := make([]string, 0, len(base)+len(overrides)+len(extra))
	for _, kv := range base {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || slices.Contains(shellStartup, name) {
			continue
		}
		if secretName.MatchString(name) && !slices.Contains(allow, name) {
			continue
		}
		env = append(env, kv)
	}
	return dedupEnv(append(append(env, overrides...), extra...))
}

// dedupEnv keeps the last entry for each name, in first-seen order.
func dedupEnv(env []string) []string {
	last := make(map[string]int, len(env))
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		last[name] = i
	}
	out := env[:0:0]
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if last[name] == i {
			out = append(out, kv)
		}
	}
	return out
}
