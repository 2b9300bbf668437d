package permission

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
