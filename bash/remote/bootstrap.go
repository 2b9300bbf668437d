package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"golang.org/x/crypto/ssh"
)

// defaultCacheDir is where an uploaded binary lives on a host, under its
// hash: SSH.CacheDir's default.
const defaultCacheDir = "$HOME/.cache/dsh-bash"

// bootstrap returns the command to run on the host: cmd as it is when its
// program is found there; else, when cmd runs dsh-bash, the running binary
// uploaded once to the cache directory (named by its SHA-256, checked
// there after the copy) and run from it.
func (s *SSH) bootstrap(ctx context.Context, c *ssh.Client, cmd string) (string, error) {
	prog, rest, _ := strings.Cut(cmd, " ")
	if prog != "dsh-bash" {
		return cmd, nil // a path or another program: the user placed it
	}
	sum, err := selfHash()
	if err != nil {
		return "", fmt.Errorf("%s: upload: %w", s.Name(), err)
	}
	dir := s.cacheDir() + "/" + sum
	out, err := output(ctx, c, probeScript(dir), nil)
	if err != nil {
		return "", fmt.Errorf("%s: looking for dsh-bash: %w", s.Name(), err)
	}
	found, uname, _ := strings.Cut(strings.TrimSpace(out), "\n")
	switch found {
	case "cached":
		return dir + "/dsh-bash " + rest, nil
	case "installed":
		return cmd, nil
	}
	if err := sameSystem(uname); err != nil {
		return "", fmt.Errorf("%s has no dsh-bash, and this one cannot run there: %w; install it there", s.Name(), err)
	}
	if err := s.upload(ctx, c, dir, sum); err != nil {
		return "", fmt.Errorf("%s: upload: %w", s.Name(), err)
	}
	return dir + "/dsh-bash " + rest, nil
}

func (s *SSH) cacheDir() string {
	if s.CacheDir != "" {
		return s.CacheDir
	}
	return defaultCacheDir
}

// probeScript says "cached" when the hash's binary is in dir, "installed"
// when dsh-bash is on the PATH, else "missing" and the system's name and
// machine.
func probeScript(dir string) string {
	return `if [ -x "` + dir + `/dsh-bash" ]; then echo cached; ` +
		`elif command -v dsh-bash >/dev/null 2>&1; then echo installed; ` +
		`else echo missing; uname -sm; fi`
}

// upload copies the running binary to dir/dsh-bash through a temporary
// file, checking its hash there before it takes the name.
func (s *SSH) upload(ctx context.Context, c *ssh.Client, dir, sum string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	f, err := os.Open(self)
	if err != nil {
		return err
	}
	defer f.Close()
	script := `set -e; umask 077; mkdir -p "` + dir + `"; t="` + dir + `/.upload.$$"; cat > "$t"; ` +
		`s=$(sha256sum "$t" | cut -d" " -f1); ` +
		`if [ "$s" != ` + sum + ` ]; then rm -f "$t"; echo "the copy's hash is $s, not ` + sum + `" >&2; exit 1; fi; ` +
		`chmod 700 "$t"; mv -f "$t" "` + dir + `/dsh-bash"`
	_, err = output(ctx, c, script, f)
	return err
}

// output runs script on a new session with stdin and returns its stdout;
// its stderr is in the error when it fails.
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
	if err := sess.Run(script); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// sameSystem checks that uname -sm names this binary's OS and machine.
func sameSystem(uname string) error {
	sys, machine, _ := strings.Cut(strings.TrimSpace(uname), " ")
	archs := map[string]string{"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386", "i386": "386", "riscv64": "riscv64", "ppc64le": "ppc64le", "s390x": "s390x"}
	if strings.ToLower(sys) != runtime.GOOS || archs[machine] != runtime.GOARCH {
		return fmt.Errorf("it runs %s, this binary is for %s/%s", strings.TrimSpace(uname), runtime.GOOS, runtime.GOARCH)
	}
	return nil
}

// selfHash is the SHA-256 of the running binary.
func selfHash() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := os.Open(self)
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
