package permission

import "strings"

// option reads the option at args[i] as getopt_long would: a long one by
// any unambiguous prefix, with its value after = or in the next argument
// (only after = when the value is optional); a cluster of short ones
// (-tI) up to the first that takes a value, which is the rest of the
// cluster or else the next argument (only the rest when optional). It
// returns that option (or the last one read), its value (hasValue when
// it has one) and how many arguments it used. unknown names an option
// the wrapper does not have, when its table lists all of them (flags).
func (w wrapper) option(args []string, i int) (opt, value string, used int, hasValue bool, unknown string) {
	a := args[i]
	if strings.HasPrefix(a, "--") {
		return w.long(args, i)
	}
	for j := 1; j < len(a); j++ {
		opt = "-" + a[j:j+1]
		rest := a[j+1:]
		switch {
		case takesValue(w.valued, opt) && rest != "":
			return opt, rest, 1, true, ""
		case takesValue(w.valued, opt) && i+1 < len(args):
			return opt, args[i+1], 2, true, ""
		case takesValue(w.valued, opt):
			return opt, "", 1, false, ""
		case takesValue(w.optional, opt):
			return opt, rest, 1, rest != "", ""
		case w.flags != "" && !takesValue(w.flags, opt):
			return opt, "", 1, false, opt
		}
	}
	return opt, "", 1, false, ""
}

// long reads the long option at args[i] (see option).
func (w wrapper) long(args []string, i int) (opt, value string, used int, hasValue bool, unknown string) {
	name, v, attached := strings.Cut(args[i], "=")
	opt = expandLong(name, w.valued+" "+w.optional+" "+w.flags)
	switch {
	case takesValue(w.valued, opt) && attached:
		return opt, v, 1, true, ""
	case takesValue(w.valued, opt) && i+1 < len(args):
		return opt, args[i+1], 2, true, ""
	case takesValue(w.valued, opt):
		return opt, "", 1, false, ""
	case takesValue(w.optional, opt):
		return opt, v, 1, attached, ""
	case w.flags != "" && !takesValue(w.flags, opt):
		return opt, "", 1, false, opt
	}
	return opt, "", 1, false, ""
}

// expandLong is the long option that name abbreviates, if exactly one
// does (else name itself).
func expandLong(name, options string) string {
	match := ""
	for _, o := range strings.Fields(options) {
		if o == name {
			return o
		}
		if strings.HasPrefix(o, "--") && strings.HasPrefix(o, name) {
			if match != "" && match != o {
				return name // ambiguous
			}
			match = o
		}
	}
	if match == "" {
		return name
	}
	return match
}

// takesValue reports whether option a takes the next argument.
func takesValue(valued, a string) bool {
	if strings.Contains(a, "=") {
		return false
	}
	for _, v := range strings.Fields(valued) {
		if a == v {
			return true
		}
	}
	return false
}
