package remote

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kevinburke/ssh_config"
)

// ApplyConfig reads the OpenSSH client configuration at path (the user's
// ~/.ssh/config when path is "") for s.Host as ssh would, and takes from
// the first matching entries HostName, User, Port, IdentityFile and
// UserKnownHostsFile where s does not set them already (a URL's user and
// port win, as ssh's command line does). A missing file changes nothing;
// other keys (ProxyJump, Match, …) are not applied.
func (s *SSH) ApplyConfig(path string) error {
	home, _ := os.UserHomeDir()
	if path == "" {
		if home == "" {
			return nil
		}
		path = filepath.Join(home, ".ssh", "config")
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ssh config: %w", err)
	}
	defer f.Close()
	cfg, err := ssh_config.Decode(f)
	if err != nil {
		return fmt.Errorf("ssh config %s: %w", path, err)
	}
	return s.apply(cfg, path, home)
}

// apply takes the settings for s.Host from cfg.
func (s *SSH) apply(cfg *ssh_config.Config, path, home string) error {
	alias := s.Host
	get := func(key string) string {
		v, _ := cfg.Get(alias, key)
		return v
	}
	if s.User == "" {
		s.User = get("User")
	}
	if p := get("Port"); s.Port == 0 && p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return fmt.Errorf("ssh config %s: Host %s: bad Port %q", path, alias, p)
		}
		s.Port = n
	}
	if len(s.IdentityFiles) == 0 {
		ids, _ := cfg.GetAll(alias, "IdentityFile")
		for _, id := range ids {
			s.IdentityFiles = append(s.IdentityFiles, expandSSHPath(id, home, alias))
		}
	}
	if kh := get("UserKnownHostsFile"); len(s.KnownHosts) == 0 && kh != "" {
		for _, f := range strings.Fields(kh) {
			s.KnownHosts = append(s.KnownHosts, expandSSHPath(f, home, alias))
		}
	}
	if h := get("HostName"); h != "" {
		s.Host = strings.ReplaceAll(h, "%h", alias)
	}
	return nil
}

// expandSSHPath expands ~ and the tokens %d (home) and %h (the host) of
// an ssh_config path.
func expandSSHPath(p, home, host string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = home + p[1:]
	}
	return strings.NewReplacer("%d", home, "%h", host, "%%", "%").Replace(p)
}
