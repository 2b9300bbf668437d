// Package egress is the network allowlist of the sandbox: a proxy that
// commands reach from inside their jail, through which alone they reach
// anything beyond it.
//
// One [Proxy] serves every session's listener (see [Proxy.Serve]); on each
// connection it speaks HTTP (CONNECT tunnels, without TLS interception,
// and plain requests in absolute form) or SOCKS5 (CONNECT, with names or
// addresses), telling them apart by their first byte. Each destination is
// checked against the rules ([Options].Allow and Deny: names, "*.name"
// wildcards, addresses and CIDR ranges, a name or address with a port or
// not; a deny wins), then resolved, and
// the connection is made to an address that passed the check, never to a
// name resolved again: loopback, private, link-local and other local
// addresses (and the host's own) are refused unless an address rule
// allows them, whether a
// command names them or a listed name resolves to them (DNS rebinding). A
// destination no rule names is asked about ([Options].Ask, or the asker a
// front end made after the proxy sets with [Proxy.SetFront]): allowed once,
// allowed for the session, denied (that host and port), or denied with
// every host not yet allowed. A session's user is asked one question at
// a time; other connections wait their turn in a short line, and past it,
// or past the session's rate of questions, they are refused unasked. A
// refusal answers with HTTP 403 (or the SOCKS5 "not allowed by ruleset"
// reply) and a text saying why, in the proxy's words: never in bytes an
// upstream sent ([Refusal].Cause).
//
// The proxy is bounded: a number of connections at once (and per
// session, so that one session cannot take them all), a deadline for
// each request's header and a size for it, an idle timeout on every
// tunnel, and a fixed buffer per direction, so that its memory does not
// grow with what passes through.
//
// A service on the host's loopback that an allow rule names with its
// port ("127.0.0.1:5432", "localhost:8080": see [Forwards]) is also
// forwarded: [Proxy.Forward] serves a listener the jail has at the same
// address in its own loopback, connecting what it accepts to the host's
// service, within the same bounds, so that clients that ignore proxy
// variables reach it too.
package egress
