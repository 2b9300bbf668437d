package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Network says what a jail may reach.
type Network int

const (
	// NetworkOn leaves the host's network to commands (agents install
	// packages).
	NetworkOn Network = iota
	// NetworkOff gives each jail a network namespace of its own, with only
	// a loopback interface.
	NetworkOff
	// NetworkAllowlist gives each jail a network namespace of its own, with
	// only a loopback interface, on which the agent listens at ProxyAddr
	// for Options.Egress, the proxy that decides where commands may
	// connect; their environment names it (see ProxyEnv). It needs the
	// jail: the Landlock layer cannot confine connections to a proxy.
	NetworkAllowlist
)

// ProxyAddr is where commands of a NetworkAllowlist jail reach the
// proxy, in the jail's own network namespace.
const ProxyAddr = "127.0.0.1:3128"

// ProxyEnv returns what a NetworkAllowlist jail adds to its commands'
// environment (replacing any proxy setting of the host's, which the jail
// could not reach): the variables HTTP clients, npm, pip, go, git, cargo
// and yarn read; the loopback addresses go direct.
func ProxyEnv() []string { return slices.Clone(proxyEnv) }

var proxyEnv = []string{
	"HTTP_PROXY=http://" + ProxyAddr, "HTTPS_PROXY=http://" + ProxyAddr, "ALL_PROXY=socks5h://" + ProxyAddr,
	"http_proxy=http://" + ProxyAddr, "https_proxy=http://" + ProxyAddr, "all_proxy=socks5h://" + ProxyAddr,
	"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
	"npm_config_proxy=http://" + ProxyAddr, "npm_config_https_proxy=http://" + ProxyAddr,
	"CARGO_HTTP_PROXY=http://" + ProxyAddr,
	"YARN_HTTP_PROXY=http://" + ProxyAddr, "YARN_HTTPS_PROXY=http://" + ProxyAddr,
}

// withProxyEnv is env with ProxyEnv in place of its proxy settings.
func withProxyEnv(env []string) []string {
	out := make([]string, 0, len(env)+len(proxyEnv))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !isProxyVar(name) {
			out = append(out, kv)
		}
	}
	return append(out, proxyEnv...)
}

// isProxyVar reports whether name is a proxy setting: one of ProxyEnv's,
// in any case, or another that would send commands elsewhere (not
// GOPROXY, which names a module proxy, reached through the proxy too).
func isProxyVar(name string) bool {
	switch strings.ToLower(name) {
	case "http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy", "socks_proxy", "rsync_proxy",
		"npm_config_proxy", "npm_config_https_proxy", "npm_config_noproxy", "cargo_http_proxy",
		"yarn_http_proxy", "yarn_https_proxy", "git_proxy_command":
		return true
	}
	return false
}

// Policy is what the commands of a jail may see and change. The zero Policy
// is the default described on each field.
type Policy struct {
	// Network: NetworkOn by default.
	Network Network
	// Writable are more paths commands may change (they are bound
	// read-write at the same path); ReadOnly are bound read-only even where
	// a writable path holds them; Hidden are replaced by an empty directory
	// (or an empty file). Paths that do not exist are skipped.
	Writable, ReadOnly, Hidden []string
	// LockCaches keeps the tool caches read-only: those in the home
	// directory ([CachePaths]) and those the commands' cache variables
	// (GOCACHE, CARGO_HOME and the like) name. By default they are
	// writable, so that go build, npm install, pip install --user and
	// cargo build work.
	LockCaches bool
	// Home is the home directory whose secrets are hidden and whose caches
	// are writable. Default: $HOME, else the user's home directory.
	Home string
	// Forward are services on the host's loopback that each
	// NetworkAllowlist jail has in its own loopback (see Forward); the
	// rest of that loopback is the session's. Options.Egress must then
	// be a Forwarder too. Default: none.
	Forward []Forward
}

// HiddenHomePaths returns the credentials in the home directory that no
// jail sees, relative to [Policy].Home (a new slice each time).
func HiddenHomePaths() []string { return slices.Clone(hiddenHomePaths) }

// hiddenHomePaths are HiddenHomePaths. .config/dsh holds dsh-bash's own
// configuration and tokens: a jail that read or changed them could reach,
// or widen, the server that jails it.
var hiddenHomePaths = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker",
	".netrc", ".git-credentials", ".npmrc", ".pypirc", ".config/gh",
	".password-store", ".vault-token", ".terraform.d/credentials.tfrc.json",
	".config/dsh",
}

// HiddenSystemPaths returns the paths hidden in every jail: the runtime
// directory (docker and ssh-agent sockets, dbus), the cgroup file system,
// and the system's secrets (a new slice each time).
func HiddenSystemPaths() []string { return slices.Clone(hiddenSystemPaths) }

// hiddenSystemPaths are HiddenSystemPaths. A server running as root would
// otherwise let commands read the system's secrets (root owns them: its
// commands read them without a capability).
var hiddenSystemPaths = []string{"/run", "/var/run", "/sys/fs/cgroup",
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
	"/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_dsa_key"}

// CachePaths returns the tool caches in the home directory that stay
// writable unless [Policy].LockCaches, relative to [Policy].Home (a new
// slice each time). ~/.cache and ~/.local are made when missing (pip
// install --user writes to ~/.local).
func CachePaths() []string { return slices.Clone(cachePaths) }

// cachePaths are CachePaths.
var cachePaths = []string{
	".cache", "go", ".npm", ".cargo", ".rustup", ".local", ".m2", ".gradle",
	".yarn", ".pnpm-store", ".bun", ".deno", ".nuget", ".config/go",
}

// cacheEnv are the environment variables that locate tool caches (a list
// of paths for GOPATH): the directories they name in the commands'
// environment are writable like CachePaths, unless LockCaches. A value
// that is the root, or holds the home directory, /tmp or the executor's
// temporary directories, is ignored.
var cacheEnv = []string{
	"GOCACHE", "GOMODCACHE", "GOPATH", "npm_config_cache", "NPM_CONFIG_CACHE",
	"YARN_CACHE_FOLDER", "PNPM_HOME", "BUN_INSTALL", "DENO_DIR", "CARGO_HOME",
	"RUSTUP_HOME", "PIP_CACHE_DIR", "PYTHONUSERBASE", "UV_CACHE_DIR",
	"POETRY_CACHE_DIR", "XDG_CACHE_HOME", "GRADLE_USER_HOME", "MAVEN_USER_HOME",
	"NUGET_PACKAGES", "CCACHE_DIR", "SCCACHE_DIR",
}

// envCaches are the cache directories env's cacheEnv variables name,
// except any that holds the home directory or one of private.
func (p *Policy) envCaches(env, private []string) []string {
	private = append([]string{p.home()}, private...)
	var dirs []string
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if !slices.Contains(cacheEnv, name) {
			continue
		}
		for _, dir := range filepath.SplitList(value) {
			if !filepath.IsAbs(dir) {
				continue
			}
			if !holdsAny(realPath(dir), private) {
				dirs = append(dirs, filepath.Clean(dir))
			}
		}
	}
	return dirs
}

// holdsAny reports whether dir is the root or is, or holds, one of paths.
func holdsAny(dir string, paths []string) bool {
	if dir == "/" {
		return true
	}
	for _, p := range paths {
		if p = realPath(p); p != "" && within(p, dir) {
			return true
		}
	}
	return false
}

// hiddenPaths are what no command sees: the system's hidden paths, the
// credentials in the home directory, and the policy's own.
func (p *Policy) hiddenPaths() []string {
	return slices.Concat(hiddenSystemPaths, inHome(p.home(), hiddenHomePaths), p.Hidden)
}

// home is the policy's home directory.
func (p *Policy) home() string {
	if p.Home != "" {
		return p.Home
	}
	if h := os.Getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// inHome joins relative paths to the home directory ("" when it has none).
func inHome(home string, rel []string) []string {
	if home == "" || home == "/" {
		return nil
	}
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = filepath.Join(home, r)
	}
	return out
}
