// Package session says who is calling a tool: a session's ID, which is also
// the owner token of every background task the session starts, and its
// working directory.
//
// Front ends make one Session per client session (an MCP session, an ACP
// session) and carry it on every tool call; the zero Session is a caller
// with no identity, such as a one-shot CLI run.
package session

// Session identifies the caller of a tool.
type Session struct {
	// ID is the owner token: tasks started by this session can be read and
	// killed by it alone. Empty means no owner.
	ID string
	// Cwd is the session's working directory (absolute), the default for
	// commands and the base of relative paths. Empty means the executor's
	// default.
	Cwd string
}
