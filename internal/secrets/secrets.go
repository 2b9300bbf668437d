// Package secrets holds the rules that tell a credential by its name or
// by the URL in its value: the environment scrub of bash/local drops the
// variables they match, and the audit log redacts the values they match
// in the commands it records.
package secrets

import (
	"net/url"
	"slices"
	"strings"
)

// The names of credentials, in upper case (see Name).
var (
	words    = []string{"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "PRIVATE", "COOKIE", "SESSION", "AUTHORIZATION", "OAUTH"}
	segments = []string{"PASS", "PAT", "AUTH", "PEM", "DSN", "PWD", "JWT", "CREDS", "BEARER"}
	names    = []string{"SSH_AUTH_SOCK", "SSHPASS"}
	harmless = []string{"PWD", "DBUS_SESSION_BUS_ADDRESS", "TOKENIZERS_PARALLELISM"}
	// harmlessPrefix names the variables of a login session, not secrets.
	harmlessPrefix = "XDG_SESSION_"
)

// Name reports whether a variable's name says it holds a credential:
// SSH_AUTH_SOCK and SSHPASS; else, but for PWD,
// DBUS_SESSION_BUS_ADDRESS, XDG_SESSION_* and TOKENIZERS_PARALLELISM, a
// name that contains, in any case, KEY, SECRET, TOKEN, PASSWORD, PASSWD,
// PASSPHRASE, CREDENTIAL, PRIVATE, COOKIE, SESSION, AUTHORIZATION or
// OAUTH, or one of whose parts between underscores is PASS, PAT, AUTH,
// PEM, DSN, PWD, JWT, CREDS or BEARER (GITHUB_PAT, DB_DSN and MYSQL_PWD
// do; PATH, PWD and GIT_AUTHOR_NAME do not).
func Name(name string) bool {
	upper := strings.ToUpper(name)
	if slices.Contains(names, upper) {
		return true
	}
	if slices.Contains(harmless, upper) || strings.HasPrefix(upper, harmlessPrefix) {
		return false
	}
	for _, w := range words {
		if strings.Contains(upper, w) {
			return true
		}
	}
	for seg := range strings.SplitSeq(upper, "_") {
		if slices.Contains(segments, seg) {
			return true
		}
	}
	return false
}

// URL reports whether a part of value (split at white space, commas,
// semicolons and quotes) is a URL with a credential: one whose user
// information has a password, as net/url parses it
// (postgres://u:pw@host/db), or, for http and https, any user name at all
// (https://TOKEN@github.com: a token given as the user). A part that
// net/url rejects counts when an '@' follows a ':' in its authority.
func URL(value string) bool {
	if !strings.Contains(value, "://") {
		return false
	}
	parts := strings.FieldsFunc(value, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == ',' || r == ';' || r == '"' || r == '\''
	})
	for _, p := range parts {
		if strings.Contains(p, "://") && partURL(p) {
			return true
		}
	}
	return false
}

// partURL is URL for one part that holds "://".
func partURL(p string) bool {
	u, err := url.Parse(p)
	if err == nil {
		if _, set := u.User.Password(); set {
			return true
		}
		web := strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")
		return web && u.User != nil && u.User.Username() != ""
	}
	// Unparseable: look at the authority ourselves.
	_, rest, _ := strings.Cut(p, "://")
	auth, _, _ := strings.Cut(rest, "/")
	at := strings.LastIndexByte(auth, '@')
	return at >= 0 && strings.Contains(auth[:at], ":")
}
