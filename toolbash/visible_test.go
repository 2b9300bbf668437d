package toolbash

import "testing"

func TestVisible(t *testing.T) {
	tests := []struct{ in, want string }{
		{"echo hello", "echo hello"},
		{"printf 'a\\nb'\tx\ny", "printf 'a\\nb'\tx\ny"},
		// A terminal client would erase the line and show only what
		// follows: the attack of issue 30.
		{"touch /outside/x #\x1b[2K\r\x1b[1A\x1b[2Kecho hello", `touch /outside/x #\x1b[2K\r\x1b[1A\x1b[2Kecho hello`},
		{"echo safe\u202e# txt.exe", `echo safe\u202e# txt.exe`},
		{"rm\u2066 -rf\u2069 x", `rm\u2066 -rf\u2069 x`},
		{"a\u200bb\ufeffc\u00add", `a\u200bb\ufeffc\u00add`},
		{"line\u2028sep\u2029", `line\u2028sep\u2029`},
		{"c1\u009b31m del\x7f bell\a", `c1\u009b31m del\x7f bell\x07`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"tag \U000e0041", `tag \U000e0041`},
		{"héllo wörld — ok 日本", "héllo wörld — ok 日本"},
	}
	for _, tc := range tests {
		if got := Visible(tc.in); got != tc.want {
			t.Errorf("Visible(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
