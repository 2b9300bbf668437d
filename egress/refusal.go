package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// Cause is what failed, for a refusal as Unreachable (the destination's
// lookup, connection or response) or Malformed (the client's request),
// in the proxy's own words: unlike Refusal.Err, it holds no byte that a
// resolver, an upstream or a client chose, so a front end may word it
// to the model.
type Cause int

// Causes of Unreachable (the destination was allowed, and then failed),
// then of Malformed (the client's request).
const (
	// NoSuchHost: the name does not resolve, or resolves to no address.
	NoSuchHost Cause = iota + 1
	// LookupFailed: the name could not be looked up (the resolver
	// failed).
	LookupFailed
	// ConnectFailed: no address of the destination accepted the
	// connection.
	ConnectFailed
	// TimedOut: the lookup, the connection or the response took longer
	// than the proxy waits (Options.DialTimeout, IdleTimeout).
	TimedOut
	// NoResponse: the upstream closed the connection before the end of
	// its response header.
	NoResponse
	// BadResponse: the upstream answered with a response the proxy could
	// not read (a malformed status or header line).
	BadResponse
	// ResponseTooLarge: the upstream's response header is longer than the
	// proxy reads (64 KiB).
	ResponseTooLarge

	// BadRequest: the request could not be read as HTTP or SOCKS5.
	BadRequest
	// RequestTooLarge: the request's header is longer than the proxy
	// reads (64 KiB).
	RequestTooLarge
	// BadDestination: the destination is not a host name or an address
	// (without a zone) and a port from 1 to 65535.
	BadDestination
	// Unsupported: not a request the proxy serves (CONNECT, a request
	// for an absolute http:// URL, SOCKS5 CONNECT).
	Unsupported
)

// String is the cause in a few words of the proxy's own, for a refusal's
// text: "the name does not resolve".
func (c Cause) String() string {
	switch c {
	case NoSuchHost:
		return "the name does not resolve"
	case LookupFailed:
		return "the name could not be looked up"
	case ConnectFailed:
		return "no address of it accepted the connection"
	case TimedOut:
		return "it did not answer in time"
	case NoResponse:
		return "it closed the connection before its response"
	case BadResponse:
		return "it answered with a response the proxy could not read"
	case ResponseTooLarge:
		return "its response header is longer than 64 KiB"
	case BadRequest:
		return "the request could not be read"
	case RequestTooLarge:
		return "the request header is longer than 64 KiB"
	case BadDestination:
		return "the destination is not a host name or address and a port from 1 to 65535"
	case Unsupported:
		return "the proxy serves only CONNECT, requests for absolute http:// URLs, and SOCKS5 CONNECT"
	}
	return "unknown"
}

// timeout reports whether err is a deadline's.
func timeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.As(err, &ne) && ne.Timeout()
}

// lookupCause is the cause of a failed lookup.
func lookupCause(err error) Cause {
	var de *net.DNSError
	switch {
	case timeout(err):
		return TimedOut
	case errors.As(err, &de) && de.IsNotFound:
		return NoSuchHost
	}
	return LookupFailed
}

// dialCause is the cause of the failed connections to every address of
// a destination: TimedOut if each timed out.
func dialCause(errs []error) Cause {
	for _, err := range errs {
		if !timeout(err) {
			return ConnectFailed
		}
	}
	return TimedOut
}

// responseCause is the cause of an upstream's response the proxy could
// not read; tooLarge: its header passed the bound.
func responseCause(err error, tooLarge bool) Cause {
	switch {
	case tooLarge:
		return ResponseTooLarge
	case timeout(err):
		return TimedOut
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return NoResponse
	}
	return BadResponse
}
