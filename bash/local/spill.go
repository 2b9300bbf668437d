package local

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
)

// spiller makes and accounts for the spill files of one executor. Its
// private directory (0700) holds one private directory per owner token, and
// those hold the files: 0600, random names, created with O_EXCL|O_NOFOLLOW.
// Every directory is opened once and every file is created and removed
// through the open directory (openat, unlinkat): a command may replace any
// of the directories with a symlink, and our writes and removals still land
// in our own directories. There is a cap per file and a budget for all of
// them together; when a write would pass the budget, the oldest complete
// files are evicted to make room; only when the files still being written
// fill the budget is a new one withdrawn.
type spiller struct {
	parent string // where the private directory is made
	cap    int64  // bytes one file may hold
	budget int64  // bytes all live files may hold together
	keep   bool   // leave complete files behind on Close

	mu       sync.Mutex
	top      *dirHandle           // the parent, open while root exists
	root     *dirHandle           // the executor's directory, made on first use
	rootName string               // its name in parent
	rootPath string               // its path, kept after close (see Executor.SpillDir)
	owners   map[string]*ownerDir // by key
	used     int64                // bytes reserved by files on disk
	complete []*spillFile         // finished files, oldest first: evicted first
	closed   bool
	// abandoned are directories a command moved away from their paths,
	// closed on close.
	abandoned []*dirHandle
}

// ownerDir is the private directory of one owner's spill files.
type ownerDir struct {
	key   string // ownerDirName of the owner: its key in spiller.owners
	name  string // its name in the executor's directory
	d     *dirHandle
	files int // files of ours on disk in it
	holds int // HoldSpillDir calls not released yet: kept even when empty
}

var errSpillFull = errors.New("spill file reached its size cap or the executor's spill budget")

// spillFile is one complete copy of a stream on disk.
type spillFile struct {
	sp   *spiller
	dir  *ownerDir
	name string
	path string   // absolute, for the model
	f    *os.File // nil once finished
	size int64
	gone bool // withdrawn or removed: its bytes are no longer reserved
}

// ownerDirName names an owner's directory: a fixed name for no owner, else a
// short hash of the token, which never appears itself.
func ownerDirName(owner string) string {
	if owner == "" {
		return "no-owner"
	}
	sum := sha256.Sum256([]byte(owner))
	return "owner-" + hex.EncodeToString(sum[:8])
}

// spillDirName names the executor's directory. It carries our stamp (see
// selfStamp), which lets CleanStale find it once we are dead; a directory
// whose files are kept after Close carries none, so it is never cleaned.
func spillDirName(keep bool) string {
	if stamp := selfStamp(); stamp != "" && !keep {
		return "dsh-spill-" + stamp + "-" + randomHex(4)
	}
	return "dsh-spill-kept-" + randomHex(8)
}

func (sp *spiller) create(owner, stream string) (*spillFile, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	od, err := sp.ownerLocked(owner)
	if err != nil {
		return nil, err
	}
	var last error
	for range 4 {
		name := stream + "-" + randomHex(12) + ".log"
		f, err := od.d.create(name)
		if err == nil {
			od.files++
			return &spillFile{sp: sp, dir: od, name: name, path: od.d.sub(name), f: f}, nil
		}
		last = err
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	sp.dropIfEmptyLocked(od)
	return nil, fmt.Errorf("create a spill file: %w", last)
}

// rootLocked opens the executor's directory, making it on first use.
func (sp *spiller) rootLocked() (*dirHandle, error) {
	if sp.closed {
		return nil, errors.New("spill files are closed")
	}
	if sp.root != nil && sp.root.atPath() {
		return sp.root, nil
	}
	if sp.root != nil {
		// A command moved our directory away (or a directory above it): its
		// files stay where it went, and new ones go to a new directory, so
		// that every path handed out names the file that holds the output.
		sp.abandonRootLocked()
	}
	top, err := openDirPath(sp.parent)
	if err != nil {
		return nil, fmt.Errorf("open the spill parent directory: %w", err)
	}
	name := spillDirName(sp.keep)
	root, err := top.mkdirPrivate(name, true)
	if err != nil {
		top.close()
		return nil, fmt.Errorf("make the spill directory: %w", err)
	}
	sp.top, sp.root, sp.rootName, sp.rootPath = top, root, name, root.path
	sp.owners = map[string]*ownerDir{}
	return root, nil
}

// abandonRootLocked forgets the executor's directory, which is no longer
// at its path, and its owner directories; their files are still accounted
// for (and removed through their directories) until they go.
func (sp *spiller) abandonRootLocked() {
	sp.abandoned = append(sp.abandoned, sp.root, sp.top)
	for _, od := range sp.owners {
		sp.abandoned = append(sp.abandoned, od.d)
	}
	sp.top, sp.root, sp.rootName, sp.owners = nil, nil, "", nil
}

// ownerLocked opens an owner's directory, making it if needed.
func (sp *spiller) ownerLocked(owner string) (*ownerDir, error) {
	root, err := sp.rootLocked()
	if err != nil {
		return nil, err
	}
	key := ownerDirName(owner)
	dirName, exclusive := key, false
	if od := sp.owners[key]; od != nil && od.d.atPath() {
		return od, nil
	} else if od != nil {
		// Moved away (see rootLocked), and something may stand in its
		// place: the new directory gets a name of its own.
		delete(sp.owners, key)
		sp.abandoned = append(sp.abandoned, od.d)
		dirName, exclusive = key+"-"+randomHex(4), true
	}
	d, err := root.mkdirPrivate(dirName, exclusive)
	if err != nil {
		return nil, fmt.Errorf("make the owner's spill directory: %w", err)
	}
	od := &ownerDir{key: key, name: dirName, d: d}
	sp.owners[key] = od
	return od, nil
}

// dropIfEmptyLocked removes an owner's directory once it holds no file of
// ours, unless the executor is closing (close removes it then).
func (sp *spiller) dropIfEmptyLocked(od *ownerDir) {
	if od.files > 0 || od.holds > 0 || sp.closed || sp.owners[od.key] != od {
		return
	}
	delete(sp.owners, od.key)
	_ = sp.root.removeChild(od.name, od.d)
	od.d.close()
}

// hold makes owner's directory if needed and keeps it until release.
func (sp *spiller) hold(owner string) (dir string, release func(), err error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	od, err := sp.ownerLocked(owner)
	if err != nil {
		return "", nil, err
	}
	od.holds++
	var once sync.Once
	return od.d.path, func() {
		once.Do(func() {
			sp.mu.Lock()
			defer sp.mu.Unlock()
			od.holds--
			sp.dropIfEmptyLocked(od)
		})
	}, nil
}

// tempFile makes a 0600 file in the executor's directory, open for reading
// and writing, and unlinks it at once.
func (sp *spiller) tempFile() (*os.File, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	root, err := sp.rootLocked()
	if err != nil {
		return nil, err
	}
	return root.createUnlinked("cmd-" + randomHex(12))
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
	_ = f.dir.d.unlink(f.name)
	f.dir.files--
	sp.dropIfEmptyLocked(f.dir)
}

// close ends all spilling. Unless keep is set, every file is removed, then
// the owners' directories and the executor's, all through the open
// directories; a directory that something else has taken the place of is
// left alone, and the error says so.
func (sp *spiller) close() error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.closed = true
	var errs []error
	if !sp.keep {
		for _, f := range sp.complete {
			f.gone = true
			errs = append(errs, f.dir.d.unlink(f.name))
		}
		sp.complete = nil
	}
	for _, d := range sp.abandoned {
		d.close()
	}
	if sp.root != nil {
		errs = append(errs, sp.closeRootLocked()...)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove the spill files: %w", err)
	}
	return nil
}

// closeRootLocked closes the executor's directory, removing it and its
// owner directories unless the files are kept.
func (sp *spiller) closeRootLocked() []error {
	var errs []error
	for _, od := range sp.owners {
		if !sp.keep {
			errs = append(errs, od.d.clear(), sp.root.removeChild(od.name, od.d))
		} else {
			_ = sp.root.removeChild(od.name, od.d) // kept files: only if empty
		}
		od.d.close()
	}
	if !sp.keep {
		errs = append(errs, sp.root.clear(), sp.top.removeChild(sp.rootName, sp.root))
	} else {
		_ = sp.top.removeChild(sp.rootName, sp.root) // only if nothing is kept
	}
	sp.root.close()
	sp.top.close()
	return errs
}

// dir is the path of the executor's directory, "" while none was made.
func (sp *spiller) dir() string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.rootPath
}
