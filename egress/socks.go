package egress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
)

// SOCKS5 (RFC 1928), without authentication; CONNECT only.
const (
	socksVersion   = 5
	socksNoAuth    = 0
	socksNoMethod  = 0xff
	socksConnect   = 1
	socksIPv4      = 1
	socksName      = 3
	socksIPv6      = 4
	socksOK        = 0
	socksFailure   = 1
	socksRuleset   = 2
	socksHostUnrch = 4
	socksCmdUnsupp = 7
	socksAddrUnsup = 8
)

// socks serves a SOCKS5 client.
func (s *session) socks() {
	if !s.socksGreet() {
		return
	}
	host, port, code, err := s.socksRequest()
	if err != nil {
		if code != 0 {
			s.socksReply(code)
		}
		if !errors.Is(err, io.EOF) {
			cause := BadRequest
			if code == socksCmdUnsupp {
				cause = Unsupported
			}
			s.refused(&Refusal{Owner: s.owner, Reason: Malformed, Cause: cause, Err: err})
		}
		return
	}
	up, ref := s.connect(host, port)
	if ref != nil {
		s.socksReply(socksCode(ref))
		return
	}
	defer up.Close()
	if !s.socksReply(socksOK) || !s.flushBuffered(up) {
		return
	}
	s.p.tunnel(s.c, up)
}

// socksGreet reads the client's methods and picks "no authentication".
func (s *session) socksGreet() bool {
	var h [2]byte
	if _, err := io.ReadFull(s.br, h[:]); err != nil {
		return false
	}
	methods := make([]byte, h[1])
	if _, err := io.ReadFull(s.br, methods); err != nil {
		return false
	}
	for _, m := range methods {
		if m == socksNoAuth {
			_, err := s.c.Write([]byte{socksVersion, socksNoAuth})
			return err == nil
		}
	}
	_, _ = s.c.Write([]byte{socksVersion, socksNoMethod})
	return false
}

// socksRequest reads the client's request; on an error, code is the reply
// to send (0: none).
func (s *session) socksRequest() (host string, port int, code byte, err error) {
	var h [4]byte
	if _, err := io.ReadFull(s.br, h[:]); err != nil {
		return "", 0, 0, err
	}
	if h[0] != socksVersion {
		return "", 0, socksFailure, fmt.Errorf("SOCKS version %d", h[0])
	}
	if h[1] != socksConnect {
		return "", 0, socksCmdUnsupp, fmt.Errorf("SOCKS command %d: only CONNECT is served", h[1])
	}
	switch h[3] {
	case socksIPv4, socksIPv6:
		b := make([]byte, 4)
		if h[3] == socksIPv6 {
			b = make([]byte, 16)
		}
		if _, err := io.ReadFull(s.br, b); err != nil {
			return "", 0, 0, err
		}
		a, _ := netip.AddrFromSlice(b)
		host = a.String()
	case socksName:
		n, err := s.br.ReadByte()
		if err != nil {
			return "", 0, 0, err
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(s.br, b); err != nil {
			return "", 0, 0, err
		}
		host = string(b)
	default:
		return "", 0, socksAddrUnsup, fmt.Errorf("SOCKS address type %d", h[3])
	}
	var pb [2]byte
	if _, err := io.ReadFull(s.br, pb[:]); err != nil {
		return "", 0, 0, err
	}
	return host, int(binary.BigEndian.Uint16(pb[:])), 0, nil
}

// socksReply answers the request: code, and an empty bound address.
func (s *session) socksReply(code byte) bool {
	_, err := s.c.Write([]byte{socksVersion, code, 0, socksIPv4, 0, 0, 0, 0, 0, 0})
	return err == nil
}

// socksCode is the SOCKS5 reply of a refusal.
func socksCode(r *Refusal) byte {
	switch r.Reason {
	case Unreachable:
		return socksHostUnrch
	case Busy, Malformed:
		return socksFailure
	}
	return socksRuleset
}
