//go:build !unix

package local

import (
	"errors"
	"os"
)

// dirHandle stands in for the Unix one: the local executor needs Unix.
type dirHandle struct{ path string }

var errNoDirFD = errors.New("spill directories need a Unix system")

func openDirPath(string) (*dirHandle, error)                       { return nil, errNoDirFD }
func (d *dirHandle) mkdirPrivate(string, bool) (*dirHandle, error) { return nil, errNoDirFD }
func (d *dirHandle) openPrivate(string) (*dirHandle, error)        { return nil, errNoDirFD }
func (d *dirHandle) create(string) (*os.File, error)               { return nil, errNoDirFD }
func (d *dirHandle) createUnlinked(string) (*os.File, error)       { return nil, errNoDirFD }
func (d *dirHandle) unlink(string) error                           { return errNoDirFD }
func (d *dirHandle) removeChild(string, *dirHandle) error          { return errNoDirFD }
func (d *dirHandle) clear() error                                  { return errNoDirFD }
func (d *dirHandle) entries() ([]os.DirEntry, error)               { return nil, errNoDirFD }
func (d *dirHandle) sub(name string) string                        { return d.path + "/" + name }
func (d *dirHandle) close()                                        {}
func (d *dirHandle) atPath() bool                                  { return false }
