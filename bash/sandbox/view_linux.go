package sandbox

import (
	"os"
	"path/filepath"
	"slices"
)

// View describes the jail a session with the given workspace gets, whose
// commands have env as their environment.
func (e *Executor) View(workspace string, env []string) View {
	p := &e.jails.policy
	jp := jailPaths{workspace: workspace, serverTemp: e.jails.serverTemp, env: env}
	abi := landlockABI()
	lm := e.jails.limits
	if e.jails.layer == LayerLandlock {
		return e.landlockView(jp, abi)
	}
	v := View{Layer: LayerJail,
		Writable:    existing(p.writable(jp)),
		Private:     append([]string{"/tmp"}, p.tempCovers(jp.serverTemp)...),
		Tmp:         max(lm.limits.Tmp, 0),
		ReadOnly:    existing(p.readOnly(workspace)),
		Hidden:      existing(p.hiddenPaths()),
		Network:     p.Network,
		LandlockABI: abi,
	}
	e.jails.mu.Lock()
	v.FenceErr = e.jails.fenceErr
	e.jails.mu.Unlock()
	e.limitsView(&v)
	return v
}

// landlockView is View for the Landlock layer. A workspace that no
// session may have makes nothing writable.
func (e *Executor) landlockView(jp jailPaths, abi int) View {
	p := &e.jails.policy
	writable := p.writable(jp)
	if e.jails.admit(jp.workspace) != nil {
		writable = writable[1:]
	}
	v := View{Layer: LayerLandlock, Writable: existing(append(writable, landlockDevices...)),
		NotHidden:   inAny(existing(p.hiddenPaths()), writable),
		NotReadOnly: inAny(existing(p.ReadOnly), writable),
		Network:     p.Network, LandlockABI: abi}
	v.Hidden = without(existing(p.hiddenPaths()), v.NotHidden)
	if _, why := e.Layer(); why != nil {
		v.JailError = why.Error()
	}
	e.jails.mu.Lock()
	v.UsernsErr = e.jails.usernsErr
	e.jails.mu.Unlock()
	e.limitsView(&v)
	return v
}

// limitsView fills in the limits that apply.
func (e *Executor) limitsView(v *View) {
	lm := e.jails.limits
	if lm.dirs[ctlMemory] != "" {
		v.Memory = lm.limits.Memory
	}
	if lm.dirs[ctlPids] != "" {
		v.Pids = lm.limits.Pids
	}
	v.CPUShared = lm.dirs[ctlCPU] != ""
	if e.jails.limitsErr != nil {
		v.LimitsMissing = e.jails.limitsErr.Error()
	}
}

// inAny are those of paths that lie within one of dirs (or are one),
// their links resolved.
func inAny(paths, dirs []string) []string {
	var real []string
	for _, d := range dirs {
		if r := realPath(d); filepath.IsAbs(r) {
			real = append(real, r)
		}
	}
	var out []string
	for _, p := range paths {
		r := realPath(p)
		if slices.ContainsFunc(real, func(d string) bool { return within(r, d) }) {
			out = append(out, p)
		}
	}
	return out
}

// without are those of paths not in drop.
func without(paths, drop []string) []string {
	return slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return slices.Contains(drop, p) })
}

// existing are those of paths that exist.
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// Limits are the limits each session's jail gets, with their defaults
// filled in; View says which of them the host lets apply.
func (e *Executor) Limits() Limits { return e.jails.limits.limits }
