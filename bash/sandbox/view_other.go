//go:build !linux

package sandbox

// View is empty: there are no jails outside Linux.
func (e *Executor) View(workspace string, env []string) View { return View{} }

// Limits are the limits each session's jail gets: none here.
func (e *Executor) Limits() Limits { return Limits{} }
