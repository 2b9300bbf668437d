package permission

import "strings"

// raisesPriority reports whether a wrapper runs its command with a
// priority above the ordinary (nice -n -20, chrt -f 99, ionice -c 1): it
// can take the machine from every other process, so it needs a rule of
// its own, as sudo does. An option only known when it runs may.
func raisesPriority(base string, args []string, known int) bool {
	switch base {
	case "nice":
		return niceRaises(args, known)
	case "chrt":
		return chrtRaises(args, known)
	case "ionice":
		return ioniceRaises(args, known)
	}
	return false
}

// niceRaises: a negative adjustment (-n -5, -n-5, --adjustment=-5, and
// the obsolete --5).
func niceRaises(args []string, known int) bool {
	w := wrappers["nice"]
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case i >= known:
			return true
		case a == "--" || !strings.HasPrefix(a, "-") || a == "-":
			return false
		case strings.HasPrefix(a, "--") && len(a) > 2 && a[2] >= '0' && a[2] <= '9':
			return true // --20 is an adjustment of -20
		}
		opt, v, used, hasValue, _ := w.option(args, i)
		if hasValue && (opt == "-n" || opt == "--adjustment") && (i+used-1 >= known || strings.HasPrefix(v, "-")) {
			return true
		}
		i += used - 1
	}
	return false
}

// chrtRaises: any policy but SCHED_OTHER, SCHED_BATCH and SCHED_IDLE
// (chrt's default is SCHED_RR).
func chrtRaises(args []string, known int) bool {
	for _, a := range args[1:min(known+1, len(args))] {
		switch {
		case isDynamic(a):
			return true
		case a == "-o" || a == "--other" || a == "-b" || a == "--batch" || a == "-i" || a == "--idle":
			return false
		case !strings.HasPrefix(a, "-"):
			return true // the priority: the policy is the default or one given
		}
	}
	return true
}

// ioniceRaises: the realtime class (-c 1, -c1, --class=realtime).
func ioniceRaises(args []string, known int) bool {
	w := wrappers["ionice"]
	for i := 1; i < len(args); i++ {
		a := args[i]
		if i >= known {
			return true
		}
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			return false
		}
		opt, v, used, hasValue, _ := w.option(args, i)
		if hasValue && (opt == "-c" || opt == "--class") && (i+used-1 >= known || v == "1" || strings.HasPrefix("realtime", strings.ToLower(v))) {
			return true
		}
		i += used - 1
	}
	return false
}
