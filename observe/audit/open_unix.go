//go:build unix

package audit

import "syscall"

// openNonblock keeps Open from waiting for a reader of a FIFO.
const openNonblock = syscall.O_NONBLOCK
