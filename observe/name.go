package observe

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// SessionName is the name events give the session whose owner token is
// owner: "s-" and 12 hex digits of an HMAC-SHA256 of the token, under a
// key drawn at random once per process. "" for no owner.
//
// The owner token is a capability (whoever holds it may read and kill the
// session's tasks), so it never appears in an event. Its name is the same
// wherever the process computes it, so that the layers that know only
// the token (the executor's tasks, the network proxy) name the session as
// its front end does, with no table to share; it cannot be turned back
// into the token, nor tested against a guessed one outside the process,
// and the next process names the same token differently.
func SessionName(owner string) string {
	if owner == "" {
		return ""
	}
	m := hmac.New(sha256.New, nameKey())
	m.Write([]byte(owner))
	return "s-" + hex.EncodeToString(m.Sum(nil)[:6])
}

// nameKey is SessionName's key. It is the one value of this package that
// lives as long as the process: an immutable random key, drawn on first
// use, that every producer of events must share for the names to agree.
var nameKey = sync.OnceValue(func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail
	return b
})
