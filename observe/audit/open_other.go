//go:build !unix

package audit

const openNonblock = 0
