package local

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dshgo/dsh/internal/secrets"
)

// The environment of every command is the executor's base environment
// scrubbed by these rules, then the overrides, then Options.Env.
//
// A variable is dropped, whatever Options.AllowEnv says, when it changes what
// bash runs rather than what the command sees:
//
//   - BASH_ENV and ENV (a file bash reads before the command),
//   - SHELLOPTS and BASHOPTS (shell options, such as xtrace, set at start),
//   - every name starting with BASH_FUNC_ (an exported function, which can
//     replace any command, even echo).
//
// A variable is dropped, unless Options.AllowEnv names it, when
//
//   - its name, in upper case, contains one of the long words KEY, SECRET,
//     TOKEN, PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL, PRIVATE, COOKIE,
//     SESSION, AUTHORIZATION or OAUTH anywhere; or
//   - one of the parts of its name between underscores, in upper case, is one
//     of the short words PASS, PAT, AUTH, PEM, DSN, PWD, JWT, CREDS or BEARER
//     (so GITHUB_PAT, NPM_AUTH, PAT_TOKEN, DB_DSN, AUTH_HEADER, MYSQL_PWD and
//     CI_JOB_JWT go, while PATH, PWD, OLDPWD, GIT_AUTHOR_NAME and COMPASS_HOME
//     stay); or
//   - it is SSH_AUTH_SOCK (the agent that signs as the user) or SSHPASS
//     (the password sshpass -e sends); or
//   - its value holds a URL with a credential: any part of the value (split
//     at white space, commas, semicolons and quotes) that contains "://" and
//     whose user information has a password, as net/url parses it
//     (postgres://u:pw@host/db, https://user:tok@github.com), or, for http
//     and https, any user name at all (https://TOKEN@github.com: a token
//     given as the user). A part that net/url rejects counts when an '@'
//     follows a ':' in its authority.
//
// These names are kept although they contain a long word, for programs
// that need them and carry no secret: PWD, DBUS_SESSION_BUS_ADDRESS, the
// XDG_SESSION_* variables and TOKENIZERS_PARALLELISM.
//
// The credential rules live in package secrets (Name and URL), which the
// audit log shares.
var (
	shellControl = []string{"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS"}
	shellFuncPfx = "BASH_FUNC_"
)

// overrides keep programs from paging, colouring or prompting.
var overrides = []string{
	"NO_COLOR=1",
	"TERM=dumb",
	"PAGER=cat",
	"GIT_PAGER=cat",
	"GIT_TERMINAL_PROMPT=0",
}

// commandEnv builds the environment of every command: base minus what the
// rules above drop (allow names variables let through despite the secret
// rules), then the overrides, then extra. Later entries win.
func commandEnv(base, allow, extra []string) []string {
	env := make([]string, 0, len(base)+len(overrides)+len(extra))
	for _, kv := range base {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || isShellControl(name) {
			continue
		}
		if looksSecret(name, value) && !slices.Contains(allow, name) {
			continue
		}
		env = append(env, kv)
	}
	return dedupEnv(append(append(env, overrides...), extra...))
}

// isShellControl reports whether a variable changes what bash runs.
func isShellControl(name string) bool {
	return slices.Contains(shellControl, name) || strings.HasPrefix(name, shellFuncPfx)
}

// checkAllowEnv refuses to let shell-control variables through.
func checkAllowEnv(allow []string) error {
	for _, name := range allow {
		if isShellControl(name) {
			return fmt.Errorf("AllowEnv cannot let %s through: it changes what bash runs (set it in Env if you mean it)", name)
		}
	}
	return nil
}

// looksSecret reports whether a variable looks like a credential by its name
// or its value (the rules of package secrets, shared with the audit log).
func looksSecret(name, value string) bool {
	return secrets.Name(name) || secrets.URL(value)
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
