//go:build !linux

package sandbox

// View is empty: there are no jails outside Linux.
func (e *Executor) View(workspace string, env []string) View { return View{} }
