// Package sshdtest runs a real OpenSSH server for tests, on a loopback
// port of its own, with its own host key and authorized key; no system
// configuration is read or changed. Its callers build their SSH dialers
// from the Server's fields (it imports no dialer of the project's, so that
// bash/remote's own tests can use it).
package sshdtest
