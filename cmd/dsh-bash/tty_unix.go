//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTTY reports whether f is a terminal (not merely a character device,
// as /dev/null is).
func isTTY(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}
