package secrets

import "testing"

// The rules' full table is bash/local's (env_test.go), which drops the
// variables they match; these are the cases the audit log leans on.
func TestName(t *testing.T) {
	for name, want := range map[string]bool{
		"API_KEY": true, "github_token": true, "GITHUB_PAT": true, "MYSQL_PWD": true, "SSHPASS": true,
		"password": true, "db.password": true, "X_API_KEY": true,
		"PATH": false, "PWD": false, "GIT_AUTHOR_NAME": false, "XDG_SESSION_ID": false, "COMPASS_HOME": false, "user": false,
	} {
		if got := Name(name); got != want {
			t.Errorf("Name(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestURL(t *testing.T) {
	for value, want := range map[string]bool{
		"postgres://u:pw@host/db": true, "https://tok@github.com/x.git": true, "a, https://u:@h": true,
		"postgres://u:p%zz@host/db": true,
		"https://github.com/x":      false, "ssh://git@github.com/x": false, "mailto:a@b.c": false,
	} {
		if got := URL(value); got != want {
			t.Errorf("URL(%q) = %v, want %v", value, got, want)
		}
	}
}
