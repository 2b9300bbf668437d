package local

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// spiller makes and accounts for the spill files of one executor: a private
// directory (0700), files 0600 with random names created with O_EXCL, a cap
// per file and a budget for all of them together. When a write would pass
// the budget, the oldest complete files are evicted to make room; only when
// the files still being written fill the budget is a new one withdrawn.
type spiller struct {
	parent string // where the private directory is made
	cap    int64  // bytes one file may hold
	budget int64  // bytes all live files may hold together
	keep   bool   // leave complete files behind on Close

	mu       sync.Mutex
	dir      string       // made on first use
	used     int64        // bytes reserved by files on disk
	complete []*spillFile // finished files, oldest first: evicted first
	closed   bool
}

var errSpillFull = errors.New("spill file reached its size cap or the executor's spill budget")

// spillFile is one complete copy of a stream on disk.
type spillFile struct {
	sp   *spiller
	path string
	f    *os.File // nil once finished
	size int64
	gone bool // withdrawn or removed: its bytes are no longer reserved
}

func (sp *spiller) create(stream string) (*spillFile, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.closed {
		return nil, errors.New("spill files are closed")
	}
	if err := sp.ensureDirLocked(); err != nil {
		return nil, err
	}
	var last error
	for range 4 {
		path := filepath.Join(sp.dir, stream+"-"+randomHex(12)+".log")
		f, err := openExclusive(path)
		if err == nil {
			return &spillFile{sp: sp, path: path, f: f}, nil
		}
		last = err
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	return nil, fmt.Errorf("create a spill file: %w", last)
}

// ensureDirLocked makes the private directory on first use.
func (sp *spiller) ensureDirLocked() error {
	if sp.dir != "" {
		return nil
	}
	dir, err := os.MkdirTemp(sp.parent, "dsh-spill-")
	if err != nil {
		return fmt.Errorf("make the spill directory: %w", err)
	}
	sp.dir = dir
	return nil
}

// tempFile makes a 0600 file in the private directory, open for reading and
// writing, and unlinks it at once.
func (sp *spiller) tempFile() (*os.File, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.closed {
		return nil, errors.New("spill files are closed")
	}
	if err := sp.ensureDirLocked(); err != nil {
		return nil, err
	}
	path := filepath.Join(sp.dir, "cmd-"+randomHex(12))
	f, err := openExclusive(path)
	if err != nil {
		return nil, fmt.Errorf("create a temporary file: %w", err)
	}
	os.Remove(path)
	return f, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}

// reserve takes n bytes from the budget for f; false when f would pass its
// cap, or the budget would be overdrawn even after evicting every complete
// file, oldest first.
func (sp *spiller) reserve(f *spillFile, n int64) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if f.size+n > sp.cap {
		return false
	}
	for sp.used+n > sp.budget && len(sp.complete) > 0 {
		old := sp.complete[0]
		sp.complete = sp.complete[1:]
		sp.removeLocked(old)
	}
	if sp.used+n > sp.budget {
		return false
	}
	sp.used += n
	f.size += n
	return true
}

// write appends p to the file; any failure means the file is no longer
// complete and the caller must withdraw it.
func (f *spillFile) write(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if !f.sp.reserve(f, int64(len(p))) {
		return errSpillFull
	}
	_, err := f.f.Write(p)
	return err
}

// finish closes the file once its stream has ended. A close error withdraws
// the file.
func (f *spillFile) finish() error {
	if f.f == nil {
		return nil
	}
	err := f.f.Close()
	f.f = nil
	if err != nil {
		f.remove()
		return err
	}
	f.sp.mu.Lock()
	if !f.gone {
		f.sp.complete = append(f.sp.complete, f)
	}
	f.sp.mu.Unlock()
	return nil
}

// available reports whether the file is still on disk and complete so far.
func (f *spillFile) available() bool {
	f.sp.mu.Lock()
	defer f.sp.mu.Unlock()
	return !f.gone
}

// withdraw gives up on an incomplete file: it is closed and removed.
func (f *spillFile) withdraw() {
	if f.f != nil {
		f.f.Close()
		f.f = nil
	}
	f.remove()
}

// remove deletes the file and returns its bytes to the budget.
func (f *spillFile) remove() {
	f.sp.mu.Lock()
	defer f.sp.mu.Unlock()
	if i := slices.Index(f.sp.complete, f); i >= 0 {
		f.sp.complete = slices.Delete(f.sp.complete, i, i+1)
	}
	f.sp.removeLocked(f)
}

func (sp *spiller) removeLocked(f *spillFile) {
	if f.gone {
		return
	}
	f.gone = true
	sp.used -= f.size
	os.Remove(f.path)
}

// close ends all spilling. Unless keep is set, the directory and every file
// in it are removed.
func (sp *spiller) close() error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.closed = true
	if sp.dir == "" || sp.keep {
		return nil
	}
	if err := os.RemoveAll(sp.dir); err != nil {
		return fmt.Errorf("remove the spill directory: %w", err)
	}
	return nil
}
