package permission

import "strings"

// option reads the option at args[i] as getopt_long would: a long one by
// any unambiguous prefix, with its value after = or in the next argument;
// a short one with its value attached or in the next argument. It
// returns the option's full name, its value (ok when it takes one) and
// how many arguments it used.
func (w wrapper) option(args []string, i, known int) (opt, value string, used int, ok bool) {
	a := args[i]
	if strings.HasPrefix(a, "--") {
		name, v, hasValue := strings.Cut(a, "=")
		opt = expandLong(name, w.valued+" "+w.writes)
		switch {
		case !takesValue(w.valued, opt):
			return opt, "", 1, false
		case hasValue:
			return opt, v, 1, true
		case i+1 < len(args):
			return opt, args[i+1], 2, true
		}
		return opt, "", 1, false
	}
	opt = a[:min(2, len(a))]
	switch {
	case !takesValue(w.valued, opt):
		return opt, "", 1, false
	case len(a) > 2:
		return opt, a[2:], 1, true
	case i+1 < len(args):
		return opt, args[i+1], 2, true
	}
	return opt, "", 1, false
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
