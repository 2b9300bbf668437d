package permission

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// ExecRules are deny rules as an executor enforces them at each exec: on
// the argv a program really got and on the file the kernel loaded, after
// every expansion, in any process of a command's tree. They complement
// Policy.Check, which reads the text before anything runs: what the text
// hides (an argv built by expansion, a program run by a script, xargs or
// make) is still refused when it runs.
//
// A rule whose first word is a name ("git push --force", "rm -rf") matches
// a program by the base name of its resolved path, by its argv[0], and by
// its file: a link or a copy of the named program under another name is
// the same program. A script matches by the script's name as its
// interpreter's argv names it. Options of git before its subcommand are
// passed over, so that git -C DIR -c a=b push --force matches "git push
// --force". The zero ExecRules refuses nothing.
type ExecRules struct {
	rules []Rule
	pol   Policy             // the rules, for Policy.DenyRule
	files map[fileKey]string // the named programs' files, by identity
	sizes map[int64][]namedFile

	mu     sync.Mutex
	hashes map[string][sha256.Size]byte // path of a named program: its content's hash
}

type fileKey struct{ dev, ino uint64 }

type namedFile struct{ name, path string }

// ExecProgram is a program the kernel has loaded and that has not run.
type ExecProgram struct {
	// Path is its resolved path; Argv its argv.
	Path string
	Argv []string
	// Cwd, if set, reads its working directory, which a script named by a
	// relative path needs.
	Cwd func() string
	// Dev, Ino and Size identify its file.
	Dev, Ino uint64
	Size     int64
	// Open, if set, opens the very file that was loaded (not Path, which
	// may have changed since): its content is compared with a named
	// program's of the same size.
	Open func() (io.ReadCloser, error)
}

// NewExecRules makes the exec rules of the deny patterns. path is the
// PATH in which the named programs are looked up, to know their files.
func NewExecRules(patterns []string, path string) (*ExecRules, error) {
	e := &ExecRules{files: map[fileKey]string{}, sizes: map[int64][]namedFile{}, hashes: map[string][sha256.Size]byte{}}
	for _, p := range patterns {
		r, err := NewRule(Deny, p, "exec")
		if err != nil {
			return nil, err
		}
		e.rules = append(e.rules, r)
		e.learn(r.words[0], path)
	}
	if len(e.rules) > 0 {
		e.learnLoaders()
	}
	e.pol.Rules = e.rules
	return e, nil
}

// Patterns are the rules' patterns, as NewExecRules took them.
func (e *ExecRules) Patterns() []string {
	if e == nil {
		return nil
	}
	out := make([]string, len(e.rules))
	for i, r := range e.rules {
		out[i] = r.Pattern
	}
	return out
}

// learn finds the files of a program a rule names in each directory of
// path, and in the usual directories of programs.
func (e *ExecRules) learn(name, path string) {
	if strings.ContainsAny(name, "/*?[\\") {
		return
	}
	dirs := append(filepath.SplitList(path), "/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin")
	for _, d := range dirs {
		if filepath.IsAbs(d) {
			e.learnFile(name, filepath.Join(d, name))
		}
	}
}

// learnFile learns that the regular file at p (through links) is the
// program name.
func (e *ExecRules) learnFile(name, p string) {
	var st syscall.Stat_t
	if syscall.Stat(p, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return
	}
	k := fileKey{uint64(st.Dev), st.Ino}
	if _, ok := e.files[k]; ok {
		return
	}
	e.files[k] = name
	e.sizes[st.Size] = append(e.sizes[st.Size], namedFile{name, p})
}

// loaderName stands, among the named programs' files, for a dynamic
// loader's: a copy or link of ld.so under another name is a loader too.
const loaderName = "\x00ld.so"

// learnLoaders learns the files of the system's dynamic loaders.
func (e *ExecRules) learnLoaders() {
	for _, pattern := range []string{"/lib*/ld-linux*.so*", "/lib/*/ld-linux*.so*", "/usr/lib*/ld-linux*.so*",
		"/usr/lib/*/ld-linux*.so*", "/lib/ld-musl*.so*", "/usr/lib/ld-musl*.so*"} {
		paths, _ := filepath.Glob(pattern)
		for _, p := range paths {
			e.learnFile(loaderName, p)
		}
	}
}

// Refuse returns the deny rule that matches the program, or nil.
func (e *ExecRules) Refuse(p ExecProgram) *Rule {
	if e == nil || len(e.rules) == 0 || len(p.Argv) == 0 {
		return nil
	}
	for _, argv := range e.views(p) {
		if r := e.match(argv); r != nil {
			return r
		}
	}
	return nil
}

// views are the argvs under which the program is matched: named by its
// path, by its argv[0], by the named program whose file it is, and, for
// an interpreter, by the script it runs.
func (e *ExecRules) views(p ExecProgram) [][]string {
	rest := p.Argv[1:]
	views := [][]string{
		append([]string{p.Path}, rest...),
		p.Argv,
	}
	name := e.sameFile(p)
	if name != "" && name != loaderName {
		views = append(views, append([]string{name}, rest...))
	}
	switch {
	case isLoader(p.Path) || name == loaderName:
		if i := loaderProgram(p.Argv); i > 0 {
			views = append(views, p.Argv[i:])
			views = append(views, e.scriptViews(p.Argv[i:], p.Cwd)...)
		}
	case interpreters[filepath.Base(p.Path)] || isEnv(p.Path) || scriptInterpreter(p.Path):
		for i := 1; i <= 2 && i < len(p.Argv); i++ {
			if !strings.HasPrefix(p.Argv[i], "-") {
				views = append(views, p.Argv[i:])
				views = append(views, e.scriptViews(p.Argv[i:], p.Cwd)...)
			}
		}
	}
	return views
}

// isLoader reports whether a program is a dynamic loader (ld.so), which
// runs the program its arguments name without an exec of it:
// ld-linux-x86-64.so.2, ld-linux-aarch64.so.1, ld-musl-x86_64.so.1.
func isLoader(path string) bool {
	b := filepath.Base(path)
	return strings.HasPrefix(b, "ld-linux") || strings.HasPrefix(b, "ld-musl") || b == "ld.so" ||
		strings.HasPrefix(b, "ld.so.")
}

// loaderProgram is the index of the program a loader's argv runs, past
// the loader's options (those with a value take the next word); 0 when
// there is none (--list, --help).
func loaderProgram(argv []string) int {
	for i := 1; i < len(argv); i++ {
		switch a := argv[i]; {
		case a == "--":
			if i+1 < len(argv) {
				return i + 1
			}
			return 0
		case loaderValued[a]:
			i++
		case !strings.HasPrefix(a, "-"):
			return i
		}
	}
	return 0
}

// loaderValued are ld.so's options that take the next word as a value.
var loaderValued = map[string]bool{"--argv0": true, "--library-path": true, "--preload": true, "--audit": true,
	"--inhibit-rpath": true, "--glibc-hwcaps-prepend": true, "--glibc-hwcaps-mask": true}

// scriptViews name the script an interpreter (or the program a loader)
// is given by its resolved path and, when it is a named program's file (a
// link or a copy of it), by that program. The interpreter opens the file
// after the check: a file replaced in between is not seen (a script is
// text any program can write out anyway, and a replaced binary is a
// program of the command's own).
func (e *ExecRules) scriptViews(argv []string, cwd func() string) [][]string {
	path := argv[0]
	if !filepath.IsAbs(path) {
		dir := ""
		if cwd != nil {
			dir = cwd()
		}
		if dir == "" {
			return nil
		}
		path = filepath.Join(dir, path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil
	}
	rest := argv[1:]
	views := [][]string{append([]string{real}, rest...)}
	var st syscall.Stat_t
	if syscall.Stat(real, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return views // not a FIFO or a device: reading one could hang the tracer
	}
	f := ExecProgram{Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size,
		Open: func() (io.ReadCloser, error) { return os.Open(real) }}
	if name := e.sameFile(f); name != "" {
		views = append(views, append([]string{name}, rest...))
	}
	return views
}

func isEnv(path string) bool { return filepath.Base(path) == "env" }

// scriptInterpreter: the shells and interpreters with a version in their
// name (python3.11, perl5.36).
func scriptInterpreter(path string) bool {
	b := strings.TrimRight(filepath.Base(path), "0123456789.")
	return interpreters[b] || b == "dash" || b == "ksh" || b == "mksh" || b == "busybox"
}

// sameFile names the denied program whose file p's is, if any: the same
// inode, or the same size and content.
func (e *ExecRules) sameFile(p ExecProgram) string {
	if name, ok := e.files[fileKey{p.Dev, p.Ino}]; ok {
		return name
	}
	same := e.sizes[p.Size]
	if len(same) == 0 || p.Open == nil {
		return ""
	}
	h, err := hashOf(p.Open)
	if err != nil {
		return ""
	}
	for _, f := range same {
		if e.hashOfNamed(f.path) == h {
			return f.name
		}
	}
	return ""
}

func (e *ExecRules) hashOfNamed(path string) [sha256.Size]byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	if h, ok := e.hashes[path]; ok {
		return h
	}
	h, err := hashOf(func() (io.ReadCloser, error) { return os.Open(path) })
	if err != nil {
		h = [sha256.Size]byte{}
	}
	e.hashes[path] = h
	return h
}

func hashOf(open func() (io.ReadCloser, error)) ([sha256.Size]byte, error) {
	f, err := open()
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("read the program: %w", err)
	}
	return [sha256.Size]byte(h.Sum(nil)), nil
}

// match finds the first rule that matches argv, all of whose words are
// known (see Policy.DenyRule: git is read past its options).
func (e *ExecRules) match(argv []string) *Rule { return e.pol.DenyRule(argv) }
