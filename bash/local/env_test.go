package local

import (
	"slices"
	"strings"
	"testing"
)

// scrubCases are variables, kept or not, with AllowEnv naming only
// ALLOWED_TOKEN.
var scrubCases = []struct {
	kv   string
	kept bool
}{
	// Kept: ordinary variables, and names that merely contain a short word.
	{"PATH=/usr/bin:/bin", true},
	{"MANPATH=/usr/share/man", true},
	{"PATH_INFO=/x", true},
	{"GOPATH=/go", true},
	{"GIT_AUTHOR_NAME=A U Thor", true},
	{"GIT_AUTHOR_EMAIL=a@example.com", true},
	{"COMPASS_HOME=/opt/compass", true},
	{"PASSENGER_APP_ENV=prod", true},
	{"DSNX=1", true},
	{"PEMBROKE=1", true},
	{"HOME=/root", true},
	{"LANG=C.UTF-8", true},
	{"HTTP_PROXY=http://proxy:3128", true},
	{"REPO=https://github.com/dshgo/dsh", true},
	{"CLONE=https://user@github.com/x.git", false},
	{"HOMEPAGE=mailto:a@b.c", true},
	{"NOTE=a:b@c", true},
	{"TZ=UTC", true},
	// Stripped by a long word anywhere in the name, in any case.
	{"OPENAI_API_KEY=sk-1", false},
	{"APIKEY=x", false},
	{"GITHUB_TOKEN=g", false},
	{"db_password=p", false},
	{"AWS_SECRET_ACCESS_KEY=a", false},
	{"MY_CREDENTIALS=c", false},
	{"PASSWD=x", false},
	{"GPG_PASSPHRASE=x", false},
	{"SSH_PRIVATE=x", false},
	{"BROWSER_COOKIE=x", false},
	{"XDG_SESSION_ID=3", true},
	{"HTTP_AUTHORIZATION=Bearer x", false},
	{"GOOGLE_OAUTH_CLIENT=x", false},
	{"MYOAUTHTHING=x", false},
	// Stripped by a short word as a whole part of the name.
	{"GITHUB_PAT=ghp_x", false},
	{"PAT_TOKEN=x", false},
	{"PAT=x", false},
	{"NPM_AUTH=x", false},
	{"AUTH_HEADER=x", false},
	{"auth=x", false},
	{"DB_DSN=x", false},
	{"SENTRY_DSN=https://k@o.ingest.sentry.io/1", false},
	{"TLS_PEM=x", false},
	{"SMTP_PASS=x", false},
	{"db_pass=x", false},
	{"SSH_AUTH_SOCK=/tmp/agent.1", false},
	// Stripped by a URL with a password in the value.
	{"DATABASE_URL=postgres://u:pw@host/db", false},
	{"REMOTE=https://user:tok@github.com/x.git", false},
	{"EMPTYPW=https://user:@github.com", false},
	{"CACHE=redis://:secret@localhost:6379/0", false},
	{"LIST=http://a.example, https://u:p@b.example", false},
	{"QUOTED=url \"https://u:p@b.example\"", false},
	{"BADESCAPE=postgres://u:p%zz@host/db", false},
	{"https_proxy=http://u:p@proxy:3128", false},
	// Let through by AllowEnv.
	{"ALLOWED_TOKEN=ok", true},
	// Shell control: never, whatever AllowEnv says.
	{"BASH_ENV=/tmp/evil", false},
	{"ENV=/tmp/evil", false},
	{"SHELLOPTS=xtrace", false},
	{"BASHOPTS=xpg_echo", false},
	{"BASH_FUNC_echo%%=() {  builtin echo pwned; }", false},
	{"BASH_FUNC_ls()=() {  :; }", false},
	// Found by review: more credentials, and harmless names kept.
	{"MYSQL_PWD=hunter2", false},
	{"SSHPASS=hunter2", false},
	{"CI_JOB_JWT=eyJ", false},
	{"REGISTRY_CREDS=x", false},
	{"BEARER=x", false},
	{"GIT_URL=https://ghp_tok@github.com/x.git", false},
	{"MIRROR=http://user@proxy:3128", false},
	{"GIT_SSH_URL=ssh://git@github.com/x.git", true},
	{"PWD=/home/u", true},
	{"OLDPWD=/home", true},
	{"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/0/bus", true},
	{"XDG_SESSION_TYPE=tty", true},
	{"TOKENIZERS_PARALLELISM=false", true},
	{"XDG_SESSION_ID=https://u:pw@h", false},
}

// TestScrubRules: every rule of the environment scrub, one variable at a
// time, with the false positives that would break ordinary tools.
func TestScrubRules(t *testing.T) {
	t.Parallel()
	allow := []string{"ALLOWED_TOKEN", "SSH_AUTH_SOCK", "DATABASE_URL", "GITHUB_PAT"}
	for _, tc := range scrubCases {
		env := commandEnv([]string{tc.kv}, allow[:1], nil)
		kept := slices.Contains(env, tc.kv)
		if kept != tc.kept {
			t.Errorf("%q kept = %v; want %v", tc.kv, kept, tc.kept)
		}
	}
	// AllowEnv lets every secret-looking kind through: by name, by value,
	// SSH_AUTH_SOCK.
	for _, kv := range []string{"SSH_AUTH_SOCK=/tmp/a", "DATABASE_URL=postgres://u:pw@h/db", "GITHUB_PAT=x", "ALLOWED_TOKEN=ok"} {
		if env := commandEnv([]string{kv}, allow, nil); !slices.Contains(env, kv) {
			t.Errorf("AllowEnv did not let %q through", kv)
		}
	}
}

func TestAllowEnvRefusesShellControl(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "BASH_FUNC_echo%%"} {
		e, err := New(&Options{AllowEnv: []string{name}})
		if err == nil {
			e.Close()
			t.Errorf("New accepted AllowEnv %s", name)
			continue
		}
		if !strings.Contains(err.Error(), "AllowEnv cannot let "+name+" through") {
			t.Errorf("AllowEnv %s: %v", name, err)
		}
	}
}

func TestOverridesAndExtra(t *testing.T) {
	t.Parallel()
	env := commandEnv([]string{"TERM=xterm", "PAGER=less", "A=1"}, nil, []string{"PAGER=more", "SHELLOPTS=braceexpand"})
	want := []string{"TERM=dumb", "PAGER=more", "A=1", "NO_COLOR=1", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0", "SHELLOPTS=braceexpand"}
	for _, kv := range want {
		if !slices.Contains(env, kv) {
			t.Errorf("%s missing from %q", kv, env)
		}
	}
	if len(env) != len(want) {
		t.Errorf("env %q; want exactly %q", env, want)
	}
}
