//go:build unix && !linux

package local

import (
	"fmt"
	"io"
	"os"
)

// commandFile puts a command in an unlinked 0600 file in the executor's
// private spill directory, for bash to read on fd 3 (as /dev/fd/3, which
// bash emulates where the system lacks it).
func commandFile(cmd string, sp *spiller) (*os.File, error) {
	f, err := sp.tempFile()
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(cmd); err != nil {
		f.Close()
		return nil, fmt.Errorf("write the command file: %w", err)
	}
	// /dev/fd/3 may share this file's offset: start bash at the beginning.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("rewind the command file: %w", err)
	}
	return f, nil
}
