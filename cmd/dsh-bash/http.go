package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dshgo/dsh/mcpserver"
)

// tokenEnv names the environment variable that may hold the bearer token.
const tokenEnv = "DSH_BASH_TOKEN"

// minTokenLen is the shortest token accepted from the user: a short one
// could be guessed by other local users, who can all reach a loopback port.
const minTokenLen = 16

// httpFlags are the flags of dsh-bash mcp's streamable HTTP front end.
type httpFlags struct {
	addr        string
	tokenFile   string
	noAuth      bool
	idle        time.Duration
	grace       time.Duration
	maxSessions int
	// drainTimeout is --drain-timeout, or the configuration file's (see
	// drain.go).
	drainTimeout time.Duration

	metrics http.Handler // served at /metrics, behind the token (nil: none)

	token string // the token given, once checked, or generated
	// tokenPath is the file that holds the token: the one given, or the
	// one generated (then removeToken deletes it and its directory).
	tokenPath   string
	removeToken func()
}

func registerHTTPFlags(fs *flag.FlagSet) *httpFlags {
	hf := &httpFlags{}
	fs.StringVar(&hf.addr, "http", "", "serve streamable HTTP on `ADDR` instead of stdio: HOST:PORT (loopback, unless a token guards it) or unix:PATH (a 0600 socket)")
	fs.StringVar(&hf.tokenFile, "token-file", "", "with --http: require the bearer token read from `PATH` (a file only you can read; or set "+tokenEnv+"); without either, one is generated into a 0600 file named on stderr")
	fs.BoolVar(&hf.noAuth, "no-auth", false, "with --http: serve without a token (loopback or unix socket only): any local user could run commands as you")
	fs.DurationVar(&hf.idle, "idle-timeout", time.Hour, "with --http: end a session (and kill its tasks) when it gets no request this long; 0 never")
	fs.DurationVar(&hf.grace, "session-grace", mcpserver.DefaultSessionGrace, "with --http: end a session (and kill its tasks) when its client has gone (no request in flight, no open stream) this long; 0 never")
	fs.IntVar(&hf.maxSessions, "max-sessions", mcpserver.DefaultMaxSessions, "with --http: most open sessions; past it a new one is refused; 0 no limit")
	hf.registerDrainFlag(fs)
	return hf
}

// refuseTokenArg refuses the former --token flag before the flags are
// parsed (so that the value is not echoed): a secret on the command line
// can be read by every user.
func refuseTokenArg(args []string, stderr io.Writer) bool {
	return refuseSecretArg(args, "mcp", "token", "--token-file PATH or "+tokenEnv, stderr)
}

// refuseSecretArg refuses a flag that would carry a secret on the command
// line, before the flags are parsed (so that its value is never echoed).
func refuseSecretArg(args []string, cmd, flagName, instead string, stderr io.Writer) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == flagName {
			fmt.Fprintf(stderr, "dsh-bash %s: --%s is not accepted: every user can read a command line; use %s\n", cmd, flagName, instead)
			return false
		}
	}
	return true
}

// check validates the HTTP flags after parsing and reads the token given,
// if any; it reports problems on stderr.
func (hf *httpFlags) check(fs *flag.FlagSet, stderr io.Writer) bool {
	if err := hf.validate(fs); err != nil {
		fmt.Fprintf(stderr, "dsh-bash mcp: %v\n", err)
		return false
	}
	return true
}

func (hf *httpFlags) validate(fs *flag.FlagSet) error {
	if hf.addr == "" {
		var stray error
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "token-file", "no-auth", "idle-timeout", "session-grace", "max-sessions", "drain-timeout":
				stray = fmt.Errorf("--%s goes with --http", f.Name)
			}
		})
		return stray
	}
	env := os.Getenv(tokenEnv)
	os.Unsetenv(tokenEnv) // the commands run do not inherit it
	switch {
	case hf.noAuth && (hf.tokenFile != "" || env != ""):
		return fmt.Errorf("--no-auth and a token (--token-file or %s) contradict each other", tokenEnv)
	case hf.tokenFile != "" && env != "":
		return fmt.Errorf("give the token one way, --token-file or %s, not both", tokenEnv)
	}
	var err error
	switch {
	case hf.tokenFile != "":
		hf.token, err = readTokenFile(hf.tokenFile)
		hf.tokenPath, _ = filepath.Abs(hf.tokenFile)
	case env != "":
		hf.token, err = checkToken(env, tokenEnv)
	}
	if err != nil {
		return err
	}
	if hf.drainTimeout < 0 {
		return fmt.Errorf("--drain-timeout must not be negative (got %v)", hf.drainTimeout)
	}
	if strings.HasPrefix(hf.addr, "unix:") {
		return nil
	}
	_, err = mcpserver.ListenAddr(hf.addr, !hf.noAuth)
	return err
}

// readTokenFile reads a token from a regular file of this user that no one
// else may read or write.
func readTokenFile(path string) (string, error) {
	tok, err := readSecretFile(path, "token file")
	if err != nil {
		return "", err
	}
	return checkToken(tok, "the token in "+path)
}

// readSecretFile reads a secret, trimmed of spaces, from a regular file of
// this user's that no one else may read. what names the file in errors.
func readSecretFile(path, what string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s %s is not a regular file", what, path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("%s %s is open to other users (mode %04o): chmod 600 %s", what, path, perm, path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return "", fmt.Errorf("%s %s belongs to uid %d, not to this user (uid %d)", what, path, st.Uid, os.Geteuid())
	}
	b, err := io.ReadAll(io.LimitReader(f, 4097))
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if len(b) > 4096 {
		return "", fmt.Errorf("%s %s is longer than 4096 bytes", what, path)
	}
	return strings.TrimSpace(string(b)), nil
}

// checkToken accepts a token of at least minTokenLen visible ASCII
// characters.
func checkToken(token, what string) (string, error) {
	if len(token) < minTokenLen {
		return "", fmt.Errorf("%s is shorter than %d characters: too easy to guess (openssl rand -hex 32 makes a good one)", what, minTokenLen)
	}
	for _, c := range []byte(token) {
		if c <= ' ' || c > '~' {
			return "", fmt.Errorf("%s has a character other than visible ASCII", what)
		}
	}
	return token, nil
}

// writeTokenFile makes a random token and writes it to a new 0600 file in
// a new private (0700) directory under $TMPDIR (default /tmp), named after
// this process (see tokenDirPrefix); remove deletes both.
func writeTokenFile() (token, path string, remove func(), err error) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail
	token = hex.EncodeToString(b)
	dir, err := os.MkdirTemp("", tokenDirPrefix())
	if err != nil {
		return "", "", nil, fmt.Errorf("a directory for the token: %w", err)
	}
	remove = func() { os.RemoveAll(dir) }
	path = filepath.Join(dir, "token")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err == nil {
		_, err = f.WriteString(token + "\n")
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		remove()
		return "", "", nil, fmt.Errorf("write the token file: %w", err)
	}
	return token, path, remove, nil
}

// prepare makes the token file when serving HTTP and no token was given
// (and --no-auth was not), so that its path is known before any jail is
// made: every jail hides it. Call done when the server has ended.
func (hf *httpFlags) prepare() error {
	if hf.addr == "" || hf.token != "" || hf.noAuth {
		return nil
	}
	var err error
	hf.token, hf.tokenPath, hf.removeToken, err = writeTokenFile()
	return err
}

// done removes a generated token file.
func (hf *httpFlags) done() {
	if hf.removeToken != nil {
		hf.removeToken()
	}
}

// serverPaths are the paths of this server's own endpoint and credential
// that a jailed command could use to reach it: the token file (and the
// private directory of a generated one) and a unix socket's path.
func (hf *httpFlags) serverPaths() []string {
	var paths []string
	if hf.tokenPath != "" {
		paths = append(paths, hf.tokenPath)
	}
	if hf.removeToken != nil {
		paths = append(paths, filepath.Dir(hf.tokenPath))
	}
	if path, ok := strings.CutPrefix(hf.addr, "unix:"); ok {
		if abs, err := filepath.Abs(path); err == nil {
			paths = append(paths, abs)
		}
	}
	return paths
}

// refuseOpenPort refuses --no-auth on a TCP port when jailed commands
// share the host's network: any of them could open a session of its own,
// with a workspace of its choosing, outside its jail.
func (hf *httpFlags) refuseOpenPort(jailsOnNetwork bool) error {
	if !hf.noAuth || !jailsOnNetwork || strings.HasPrefix(hf.addr, "unix:") {
		return nil
	}
	return errors.New("--no-auth on a TCP port is refused while sandboxed commands have the network: any of them could reach this server and open a session outside its jail; serve on unix:PATH (hidden from the jails), use a token, or give --sandbox-network=off")
}

// serveHTTP serves srv over streamable HTTP until ctx is done, then ends
// every session at once and closes srv; the first SIGTERM drains it first
// (see drain.go). ready answers the ready probe.
func serveHTTP(ctx context.Context, srv *mcpserver.Server, hf *httpFlags, ready func(context.Context) error, stderr io.Writer) error {
	defer srv.Close()
	ln, err := mcpserver.Listen(hf.addr, hf.noAuth)
	if err != nil {
		return err
	}
	if hf.removeToken != nil {
		fmt.Fprintf(stderr, "dsh-bash mcp: bearer token in %s (removed on exit)\n", hf.tokenPath)
	}
	if hf.noAuth {
		fmt.Fprintln(stderr, "dsh-bash mcp: no token required (--no-auth)")
	}
	drain, said, undo := hf.drainOnTerm(ctx, stderr)
	defer undo()
	fmt.Fprintf(stderr, "dsh-bash mcp: serving streamable HTTP on %s\n", where(ln, hf.addr))
	return srv.ServeStreamable(ctx, ln, &mcpserver.HTTPOptions{
		Token: hf.token, NoAuth: hf.noAuth, SessionTimeout: max(hf.idle, 0),
		SessionGrace: never(hf.grace), MaxSessions: int(never(time.Duration(hf.maxSessions))),
		Metrics: hf.metrics,
		Ready:   ready, Drain: drain, OnDrain: said, DrainTimeout: hf.drainTimeout,
	})
}

// never maps a flag's "0 or negative: never" to the options' negative (the
// options take 0 as "the default").
func never(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// where names a listener for users: an http:// URL, or unix:PATH. A
// wildcard address keeps the host the user gave (0.0.0.0, not the [::]
// Go listens on for it), with the port the listener got.
func where(ln net.Listener, addr string) string {
	switch a := ln.Addr().(type) {
	case *net.UnixAddr:
		return "unix:" + a.Name
	case *net.TCPAddr:
		if host, _, err := net.SplitHostPort(addr); err == nil && a.IP.IsUnspecified() {
			return "http://" + net.JoinHostPort(host, strconv.Itoa(a.Port)) + "/"
		}
	}
	return "http://" + ln.Addr().String() + "/"
}
