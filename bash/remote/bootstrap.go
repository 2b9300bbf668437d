package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"golang.org/x/crypto/ssh"
)

// defaultCacheDir is where an uploaded binary lives on a host, under its
// hash: SSH.CacheDir's default. It is a shell word for the host's sh.
const defaultCacheDir = "$HOME/.cache/dsh-bash"

// ScriptRunner runs script with sh on the far side, its stdin from
// stdin (nil: empty), and returns what it printed on stdout; when the
// script fails, the error holds what it printed on stderr.
type ScriptRunner func(ctx context.Context, script string, stdin io.Reader) (stdout string, err error)

// Bootstrap returns the shell command that runs cmd on a far side reached
// through run: cmd as it is when its program is found there; else, when
// cmd runs dsh-bash, the program at binary ("": the running binary)
// uploaded once to cacheDir (named by its SHA-256, checked there after
// the copy and before each use) and run from it. cacheDir is a shell
// word for the far side's sh, inside double quotes ("":
// $HOME/.cache/dsh-bash); name names the far side in errors.
func Bootstrap(ctx context.Context, run ScriptRunner, name, cacheDir, binary, cmd string) (string, error) {
	prog, rest, _ := strings.Cut(cmd, " ")
	if prog != "dsh-bash" {
		return cmd, nil // a path or another program: the user placed it
	}
	root, err := cacheRoot(cacheDir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if binary == "" {
		if binary, err = os.Executable(); err != nil {
			return "", fmt.Errorf("%s: upload: %w", name, err)
		}
	}
	sum, err := fileHash(binary)
	if err != nil {
		return "", fmt.Errorf("%s: upload: %w", name, err)
	}
	dir := root + "/" + sum
	out, err := run(ctx, probeScript(root, dir, sum), nil)
	if err != nil {
		return "", fmt.Errorf("%s: looking for dsh-bash: %w", name, err)
	}
	found, uname, _ := strings.Cut(strings.TrimSpace(out), "\n")
	exe := `"` + dir + `/dsh-bash" ` + rest
	switch found {
	case "cached":
		return exe, nil
	case "installed":
		return cmd, nil
	}
	if err := sameSystem(uname); err != nil {
		return "", fmt.Errorf("%s has no dsh-bash, and this one cannot run there: %w; install it there", name, err)
	}
	if err := upload(ctx, run, binary, root, dir, sum); err != nil {
		return "", fmt.Errorf("%s: upload: %w", name, err)
	}
	return exe, nil
}

// bootstrap is Bootstrap over a session of the SSH connection c.
func (s *SSH) bootstrap(ctx context.Context, c *ssh.Client, cmd string) (string, error) {
	run := func(ctx context.Context, script string, stdin io.Reader) (string, error) {
		return output(ctx, c, script, stdin)
	}
	return Bootstrap(ctx, run, s.Name(), s.CacheDir, "", cmd)
}

// cacheRoot is the cache directory as a word inside double quotes; a
// value that could break out of them is refused.
func cacheRoot(dir string) (string, error) {
	if dir == "" {
		return defaultCacheDir, nil
	}
	if strings.ContainsAny(dir, "\"`\\\n") || strings.Contains(dir, "$(") {
		return "", errors.New("the upload cache directory may not hold quotes, backslashes, backquotes or $(")
	}
	return strings.TrimRight(dir, "/"), nil
}

// hashCmd prints a file's SHA-256 (sha256sum, else shasum).
const hashCmd = `h() { if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d" " -f1; }; `

// safeDirs checks that the cache directory and dir belong to the user and
// that no one else may write to them (a shared cache could hold a planted
// binary).
func safeDirs(root, dir string) string {
	return `ok() { [ -d "$1" ] && [ -O "$1" ] && [ -z "$(find "$1" -maxdepth 0 -perm /022)" ]; }; ` +
		`ok "` + root + `" && ok "` + dir + `"`
}

// probeScript says "cached" when the hash's binary is in dir, safe and
// with that hash; "installed" when dsh-bash is on the PATH; else "missing"
// and the system's name and machine.
func probeScript(root, dir, sum string) string {
	return hashCmd + `b="` + dir + `/dsh-bash"; ` +
		`if [ -x "$b" ] && [ -O "$b" ] && ` + safeDirs(root, dir) + ` && [ "$(h "$b")" = ` + sum + ` ]; then echo cached; ` +
		`elif command -v dsh-bash >/dev/null 2>&1; then echo installed; ` +
		`else echo missing; uname -sm; fi`
}

// upload copies the program at binary to dir/dsh-bash through a
// temporary file, checking its hash there before it takes the name.
func upload(ctx context.Context, run ScriptRunner, binary, root, dir, sum string) error {
	f, err := os.Open(binary)
	if err != nil {
		return err
	}
	defer f.Close()
	script := `set -e; umask 077; ` + hashCmd + `mkdir -p "` + dir + `"; ` +
		safeDirs(root, dir) + ` || { echo "the cache directory is not yours alone" >&2; exit 1; }; ` +
		`t="` + dir + `/.upload.$$"; trap 'rm -f "$t"' EXIT; cat > "$t"; s=$(h "$t"); ` +
		`if [ "$s" != ` + sum + ` ]; then echo "the copy's hash is $s, not ` + sum + `" >&2; exit 1; fi; ` +
		`chmod 700 "$t"; mv -f "$t" "` + dir + `/dsh-bash"; trap - EXIT`
	_, err = run(ctx, script, f)
	return err
}

// output runs script with sh (whatever the login shell) on a new session
// with stdin, and returns its stdout; its stderr is in the error when it
// fails.
func output(ctx context.Context, c *ssh.Client, script string, stdin io.Reader) (string, error) {
	sess, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer sess.Close()
	var out, errOut bytes.Buffer
	sess.Stdin, sess.Stdout, sess.Stderr = stdin, &out, &errOut
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	if err := sess.Run("sh -c " + shellQuote(script)); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// shellQuote single-quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// sameSystem checks that uname -sm names this binary's OS and machine.
func sameSystem(uname string) error {
	sys, machine, _ := strings.Cut(strings.TrimSpace(uname), " ")
	archs := map[string]string{"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386", "i386": "386", "riscv64": "riscv64", "ppc64le": "ppc64le", "s390x": "s390x"}
	if strings.ToLower(sys) != runtime.GOOS || archs[machine] != runtime.GOARCH {
		return fmt.Errorf("it runs %s, this binary is for %s/%s", strings.TrimSpace(uname), runtime.GOOS, runtime.GOARCH)
	}
	return nil
}

// fileHash is the SHA-256 of the file at path.
func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
