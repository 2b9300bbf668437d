package permission

// What the checker knows of particular programs' arguments, for matching
// them against the rules: the options that change nothing a rule cares
// about (canonical), and which programs take a subcommand or run a
// script (the prefixes an ask offers).

// canonical rewrites a program's arguments into the form rules are
// written in, without the options that change nothing a rule cares
// about, so that rules match however the command spells them.
func (c *checker) canonical(base string, args []string, known int) ([]string, int) {
	if base == "git" {
		return c.gitArgs(args, known)
	}
	return args, known
}

// gitArgs drops git's options that change nothing a rule cares about
// before its subcommand (--no-pager, -P, -C DIR within the workspace), so
// that git --no-pager diff matches "git diff". Others (-c, --git-dir, -C
// elsewhere) stay, and keep the rules from matching.
func (c *checker) gitArgs(args []string, known int) ([]string, int) {
	out := []string{args[0]}
	i := 1
	for ; i < known; i++ {
		switch a := args[i]; {
		case a == "--no-pager" || a == "-P" || a == "--no-optional-locks" || a == "--literal-pathspecs":
			continue
		case a == "-C" && i+1 < known && c.inWorkspace(args[i+1]):
			i++
			continue
		}
		break
	}
	out = append(out, args[i:]...)
	return out, known - (i - 1)
}

// withSubcommands are the commands whose first argument says what they do.
var withSubcommands = map[string]bool{
	"git": true, "go": true, "npm": true, "pnpm": true, "yarn": true, "bun": true, "npx": true, "cargo": true,
	"docker": true, "podman": true, "kubectl": true, "helm": true, "pip": true, "pip3": true, "uv": true,
	"poetry": true, "gh": true, "terraform": true, "make": true, "just": true, "dotnet": true, "mvn": true,
	"gradle": true, "rustup": true, "brew": true, "apt": true, "apt-get": true, "systemctl": true,
	"composer": true, "bundle": true, "rake": true, "deno": true, "nix": true, "conda": true,
}

// interpreters run the file named by their first argument: allowing them
// alone would allow any program.
var interpreters = map[string]bool{"python": true, "python3": true, "node": true, "ruby": true, "perl": true,
	"bash": true, "sh": true, "zsh": true, "deno": true, "bun": true, "php": true, "Rscript": true}
