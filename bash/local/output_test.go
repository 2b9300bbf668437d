//go:build linux

package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dshgo/dsh/bash"
)

// TestHugeOutput: 64 MB through a run keeps the heap small (twice the
// bound: a buffer of the whole stream would show), keeps the exact
// tail, and spills a file whose SHA-256 is the stream's.
func TestHugeOutput(t *testing.T) {
	t.Parallel()
	const n, seed = 64_000_000, 7
	e := newExec(t, nil)
	want := sha256.New()
	var tail []byte
	genStream(n, seed, func(p []byte) {
		want.Write(p)
		tail = append(tail, p...)
		if len(tail) > 64000 {
			tail = tail[len(tail)-64000:]
		}
	})

	stop := make(chan struct{})
	peak := make(chan uint64)
	go samplePeakHeap(stop, peak)
	res := runCmd(t, e, helperCmd(t, fmt.Sprintf("gen %d %d", n, seed)))
	close(stop)
	maxHeap := <-peak
	t.Logf("peak live heap during the run: %.1f MiB", float64(maxHeap)/(1<<20))
	if maxHeap > 32<<20 {
		t.Errorf("peak heap %d bytes: memory is not bounded", maxHeap)
	}

	if !res.Stdout.Truncated || res.Stdout.SpillPath == "" {
		t.Fatalf("stdout %+v", res.Stdout)
	}
	if res.Stdout.Text != validText(dropPartialHead(tail)) {
		t.Error("the tail is not the stream's last 64000 bytes")
	}
	f, err := os.Open(res.Stdout.SpillPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := sha256.New()
	size, _ := io.Copy(got, f)
	if size != n || !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Errorf("spill file: %d bytes, sha256 %x; want %d, %x", size, got.Sum(nil), n, want.Sum(nil))
	}
}

// samplePeakHeap reports the largest live heap seen until stop is closed.
func samplePeakHeap(stop <-chan struct{}, out chan<- uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		metrics.Read(s)
		peak = max(peak, s[0].Value.Uint64())
		select {
		case <-stop:
			out <- peak
			return
		case <-tick.C:
		}
	}
}

func TestLongLine(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	res := runCmd(t, e, "head -c 10000000 /dev/zero | tr '\\0' a")
	if res.Stdout.Text != strings.Repeat("a", 64000) || !res.Stdout.Truncated {
		t.Errorf("tail of %d bytes, truncated %v", len(res.Stdout.Text), res.Stdout.Truncated)
	}
	if fi, err := os.Stat(res.Stdout.SpillPath); err != nil || fi.Size() != 10_000_000 {
		t.Errorf("spill %v %v", fi, err)
	}
}

func TestOutputAtCap(t *testing.T) {
	t.Parallel()
	spills := t.TempDir()
	e := newExec(t, &Options{MaxOutputBytes: 1000, SpillDir: spills})
	res := runCmd(t, e, "head -c 1000 /dev/zero | tr '\\0' x; head -c 1000 /dev/zero | tr '\\0' y >&2")
	if res.Stdout.Text != strings.Repeat("x", 1000) || res.Stdout.Truncated || res.Stdout.SpillPath != "" {
		t.Errorf("stdout at the cap: %d bytes, %+v", len(res.Stdout.Text), res.Stdout.Truncated)
	}
	if res.Stderr.Text != strings.Repeat("y", 1000) || res.Stderr.Truncated {
		t.Errorf("stderr at the cap: %d bytes", len(res.Stderr.Text))
	}
	if entries, _ := os.ReadDir(spills); len(entries) != 0 {
		t.Errorf("output at the cap spilled: %v", entries)
	}
	res = runCmd(t, e, "head -c 1001 /dev/zero | tr '\\0' x")
	if len(res.Stdout.Text) != 1000 || !res.Stdout.Truncated || res.Stdout.SpillPath == "" {
		t.Errorf("one byte over the cap: %d bytes, %+v", len(res.Stdout.Text), res.Stdout)
	}
}

func TestUTF8TailCut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, printf, want string
		max                int
	}{
		// "a" + 10×"é": the last 11 bytes start inside an "é".
		{name: "two-byte", printf: `a` + strings.Repeat(`\xc3\xa9`, 10), max: 11, want: strings.Repeat("é", 5)},
		// "€" is 3 bytes; 10 of them cut to the last 8 bytes.
		{name: "three-byte", printf: strings.Repeat(`\xe2\x82\xac`, 10), max: 8, want: "€€"},
		{name: "four-byte", printf: strings.Repeat(`\xf0\x9f\x98\x80`, 4), max: 7, want: "😀"},
		{name: "invalid bytes", printf: `a\xffb\xc3`, max: 100, want: "a\uFFFDb\uFFFD"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newExec(t, &Options{MaxOutputBytes: tc.max})
			res := runCmd(t, e, "printf '"+tc.printf+"'")
			if res.Stdout.Text != tc.want || !utf8.ValidString(res.Stdout.Text) {
				t.Errorf("text %q; want %q", res.Stdout.Text, tc.want)
			}
		})
	}
}

func TestInvalidBytesRawInSpill(t *testing.T) {
	t.Parallel()
	e := newExec(t, &Options{MaxOutputBytes: 4})
	res := runCmd(t, e, `printf 'ab\xff\xfecd\xc3'`)
	if res.Stdout.Text != "\uFFFDcd\uFFFD" {
		t.Errorf("text %q", res.Stdout.Text)
	}
	raw, err := os.ReadFile(res.Stdout.SpillPath)
	if err != nil || !bytes.Equal(raw, []byte("ab\xff\xfecd\xc3")) {
		t.Errorf("spill %q, %v", raw, err)
	}
}

// TestUTF8IncrementalRead: a read never splits a character; the incomplete
// tail waits for the rest, and an unfinished one at the end is U+FFFD.
func TestUTF8IncrementalRead(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	sp := newSyncPoint(t)
	tk := start(t, e, `printf 'x\xe2\x82'; echo > `+sp.fifo+`; read < `+sp.fifo+`; printf '\xacy\xf0'`, "")
	sp.reached(t)
	waitBytes(t, e, tk.ID, 3)
	r, _ := e.ReadOutput(context.Background(), tk.ID)
	if r.Stdout.Text != "x" {
		t.Errorf("first read %q; want the partial € held back", r.Stdout.Text)
	}
	done := make(chan struct{})
	defer e.OnTaskDone(func(bash.Task) { close(done) })()
	w, _ := os.OpenFile(sp.fifo, os.O_WRONLY, 0)
	w.WriteString("\n")
	w.Close()
	<-done
	r, _ = e.ReadOutput(context.Background(), tk.ID)
	if r.Stdout.Text != "€y\uFFFD" {
		t.Errorf("second read %q", r.Stdout.Text)
	}
}

// waitBytes waits until a task's stdout has received n bytes.
func waitBytes(t testing.TB, e *Executor, id bash.TaskID, n int64) {
	t.Helper()
	tk, _ := e.lookup(id)
	<-tk.ready
	s := tk.p.out
	for {
		ch := s.changed()
		s.mu.Lock()
		total := s.total
		s.mu.Unlock()
		if total >= n {
			return
		}
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			t.Fatalf("task %s printed %d bytes, not %d", id, total, n)
		}
	}
}

func TestSpillFiles(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	e, err := New(testOptions(&Options{MaxOutputBytes: 10, SpillDir: parent}))
	if err != nil {
		t.Fatal(err)
	}
	a := runCmd(t, e, "seq 100; seq 100 >&2")
	b := runCmd(t, e, "seq 100")
	paths := []string{a.Stdout.SpillPath, a.Stderr.SpillPath, b.Stdout.SpillPath}
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode() != 0o600 || !filepath.IsAbs(p) {
			t.Errorf("spill %s: %v %v", p, fi.Mode(), err)
		}
		if !strings.Contains(filepath.Base(p), "-") || len(filepath.Base(p)) < 24 {
			t.Errorf("spill name %s has no random part", p)
		}
	}
	if paths[0] == paths[2] || filepath.Base(paths[0])[7:] == filepath.Base(paths[2])[7:] {
		t.Errorf("two spill files share a name: %s %s", paths[0], paths[2])
	}
	owner := filepath.Dir(paths[0])
	for _, dir := range []string{owner, filepath.Dir(owner)} {
		if fi, err := os.Lstat(dir); err != nil || fi.Mode() != os.ModeDir|0o700 {
			t.Errorf("spill dir %s: %v %v", dir, fi.Mode(), err)
		}
	}
	if filepath.Dir(filepath.Dir(owner)) != parent {
		t.Errorf("spill dir %s is not two levels under %s", owner, parent)
	}
	if got, _ := os.ReadFile(paths[1]); string(got) != seqText(100) {
		t.Errorf("stderr spill is not the whole stream: %q", got)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("Close left spill files: %v", entries)
	}
}

func seqText(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintln(&b, i)
	}
	return b.String()
}

// TestSpillKept: with KeepSpillFiles a spill file outlives Close, and a
// directory that holds none (an owner's held for a jail, or one whose
// command spilled nothing) does not.
func TestSpillKept(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	e, err := New(testOptions(&Options{MaxOutputBytes: 10, SpillDir: parent, KeepSpillFiles: true}))
	if err != nil {
		t.Fatal(err)
	}
	res := runCmd(t, e, "seq 100")
	_, release, err := e.HoldSpillDir("someone-else")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	e.Close()
	if got, err := os.ReadFile(res.Stdout.SpillPath); err != nil || string(got) != seqText(100) {
		t.Errorf("kept spill: %v", err)
	}
	if dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(res.Stdout.SpillPath)), "*")); len(dirs) != 1 {
		t.Errorf("kept beside the spill file's directory: %q", dirs)
	}
	// An executor that spilled nothing leaves nothing.
	empty := t.TempDir()
	e, err = New(testOptions(&Options{MaxOutputBytes: 10, SpillDir: empty, KeepSpillFiles: true}))
	if err != nil {
		t.Fatal(err)
	}
	runCmd(t, e, "true")
	if _, release, err := e.HoldSpillDir("owner"); err == nil {
		release()
	}
	e.Close()
	if left, _ := os.ReadDir(empty); len(left) != 0 {
		t.Errorf("an executor that kept no file left %v", left)
	}
}

func TestSpillExclusive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("precious"), 0o600)
	if err := os.Symlink(target, filepath.Join(dir, "planted")); err != nil {
		t.Fatal(err)
	}
	d, err := openDirPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	if f, err := d.create("planted"); err == nil {
		f.Close()
		t.Fatal("create followed a planted symlink")
	}
	if got, _ := os.ReadFile(target); string(got) != "precious" {
		t.Errorf("the symlink's target was changed: %q", got)
	}
}

func TestSpillCapWithdrawsPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    Options
	}{
		{name: "file cap", o: Options{MaxOutputBytes: 100, MaxSpillBytes: 5000}},
		{name: "budget", o: Options{MaxOutputBytes: 100, SpillBudget: 5000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.SpillDir = t.TempDir()
			e := newExec(t, &tc.o)
			res := runCmd(t, e, "seq 10000")
			if !res.Stdout.Truncated || res.Stdout.SpillPath != "" || res.Stdout.Text != seqText(10000)[len(seqText(10000))-100:] {
				t.Errorf("stdout %q truncated %v path %q", res.Stdout.Text, res.Stdout.Truncated, res.Stdout.SpillPath)
			}
			filepath.WalkDir(tc.o.SpillDir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					t.Errorf("withdrawn spill file left on disk: %s", p)
				}
				return nil
			})
			// The budget is returned: a small spill works again.
			if res := runCmd(t, e, "seq 300"); res.Stdout.SpillPath == "" {
				t.Error("no spill after a withdrawn one")
			}
		})
	}
}

func TestSpillEviction(t *testing.T) {
	t.Parallel()
	e := newExec(t, &Options{MaxOutputBytes: 100, SpillBudget: 3000})
	first := runCmd(t, e, "seq 500") // 1892 bytes
	if first.Stdout.SpillPath == "" {
		t.Fatal("no spill")
	}
	second := runCmd(t, e, "seq 500")
	if second.Stdout.SpillPath == "" {
		t.Fatal("the second spill was withdrawn instead of evicting the first")
	}
	if _, err := os.Stat(first.Stdout.SpillPath); !os.IsNotExist(err) {
		t.Errorf("the oldest spill file was not evicted: %v", err)
	}
	if got, _ := os.ReadFile(second.Stdout.SpillPath); string(got) != seqText(500) {
		t.Error("the second spill file is not complete")
	}
}

// TestCleanKept: CleanKept removes a directory of kept spill files once
// nothing in it has been written to for the time given, and only then;
// SpillDir names it.
func TestCleanKept(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	e, err := New(testOptions(&Options{MaxOutputBytes: 10, SpillDir: parent, KeepSpillFiles: true}))
	if err != nil {
		t.Fatal(err)
	}
	res := runCmd(t, e, "seq 100")
	e.Close()
	dir := e.SpillDir()
	if filepath.Dir(filepath.Dir(res.Stdout.SpillPath)) != dir {
		t.Fatalf("SpillDir %q; the spill file is %s", dir, res.Stdout.SpillPath)
	}
	other := filepath.Join(parent, "dsh-spill-kept-not-ours")
	os.Mkdir(other, 0o700)
	old := time.Now().Add(-2 * time.Hour)
	age := func(paths ...string) {
		for _, p := range paths {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	owner := filepath.Dir(res.Stdout.SpillPath)
	now := time.Now()
	// Each of the directory, its owner directories and their files counts.
	for _, recent := range []string{res.Stdout.SpillPath, owner, dir} {
		age(dir, owner, res.Stdout.SpillPath, other)
		if err := os.Chtimes(recent, now, now); err != nil {
			t.Fatal(err)
		}
		if removed, err := CleanKept(parent, time.Hour); len(removed) != 0 || err != nil {
			t.Errorf("with %s changed just now: removed %q, %v", recent, removed, err)
		}
	}
	age(dir, owner, res.Stdout.SpillPath)
	if removed, err := CleanKept(parent, 3*time.Hour); len(removed) != 0 || err != nil {
		t.Errorf("younger than the age given: removed %q, %v", removed, err)
	}
	removed, err := CleanKept(parent, time.Hour)
	if _, serr := os.Stat(dir); len(removed) != 1 || removed[0] != dir || err != nil || !errors.Is(serr, fs.ErrNotExist) {
		t.Errorf("older than the age given: removed %q, %v; the directory: %v", removed, err, serr)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a directory of another name: %v", err)
	}
}
