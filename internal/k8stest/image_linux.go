package k8stest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/dshgo/dsh/internal/testwait"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// imageRepo is the test image's repository; its tag is a digest of its
// content, so that a cluster holding the tag holds this very image.
const imageRepo = "local/dsh-test-usr"

// Image returns the name of the test image, which it imports into the
// cluster unless the cluster has it (once per process). The image has no
// programs of its own: a root file system of empty directories, the
// merged-/usr symlinks (bin, sbin, lib, lib64), and in /etc a passwd and
// group (root, nobody), a copy of this machine's ld.so.cache, which glibc
// needs to find its libraries, and of its /etc/alternatives symlinks,
// which commands such as awk go through. Template mounts this machine's
// /usr over its /usr.
//
// It imports with shared/k8s/import-image.sh, which it looks for in
// $DSH_SHARED/k8s, then in ../shared/k8s next to the module, then in
// /work/shared/k8s; without it the test skips, or fails under CI=true.
func Image(t testing.TB) string {
	t.Helper()
	client := Client(t)
	name, err := imageOnce(func(ctx context.Context) (bool, error) {
		node, err := client.Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		want := "docker.io/" + imageName()
		for _, n := range node.Items {
			for _, img := range n.Status.Images {
				if slices.Contains(img.Names, want) {
					return true, nil
				}
			}
		}
		return false, nil
	})
	var missing *noScriptsError
	if errors.As(err, &missing) {
		unavailable(t, "cannot import the test image: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return name
}

var (
	imageMu   sync.Mutex
	imageDone string // the image, once imported
)

// imageOnce imports the image unless present says the cluster has it; it
// does so once per process, and across processes under a file lock, so
// that the test binaries go test runs in parallel do not import it all
// at once.
func imageOnce(present func(context.Context) (bool, error)) (string, error) {
	imageMu.Lock()
	defer imageMu.Unlock()
	if imageDone != "" {
		return imageDone, nil
	}
	name := imageName()
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "dsh-k8stest-image.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	// Another process importing holds it for a second or so.
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	ok, err := testwait.Reply("the list of the node's images", present)
	if err != nil {
		return "", err
	}
	if !ok {
		if err := importImage(name); err != nil {
			return "", err
		}
	}
	imageDone = name
	return name, nil
}

// entry is a file of the image: a directory (mode has os.ModeDir), a
// symlink (to link) or a regular file (holding data).
type entry struct {
	path string
	mode os.FileMode
	link string
	data []byte
}

// rootfs is the image's content, parents before children.
var rootfs = sync.OnceValues(func() ([]entry, error) {
	cache, err := os.ReadFile("/etc/ld.so.cache")
	if err != nil {
		return nil, fmt.Errorf("the test image copies this machine's ld.so.cache: %v", err)
	}
	dir := func(path string, perm os.FileMode) entry { return entry{path: path, mode: os.ModeDir | perm} }
	file := func(path, data string) entry { return entry{path: path, mode: 0o644, data: []byte(data)} }
	link := func(path, to string) entry { return entry{path: path, mode: os.ModeSymlink, link: to} }
	files := []entry{
		// Debian 12 has a merged /usr.
		link("bin", "usr/bin"), link("sbin", "usr/sbin"),
		link("lib", "usr/lib"), link("lib64", "usr/lib64"),
		dir("usr", 0o755), dir("tmp", 0o777|os.ModeSticky),
		dir("proc", 0o555), dir("sys", 0o555), dir("dev", 0o755), dir("root", 0o700),
		dir("etc", 0o755),
		file("etc/passwd", "root:x:0:0:root:/root:/bin/bash\n"+
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"),
		file("etc/group", "root:x:0:\nnogroup:x:65534:\n"),
		{path: "etc/ld.so.cache", mode: 0o644, data: cache},
	}
	// Commands Debian's alternatives choose (awk, editor, pager…) are
	// symlinks from /usr/bin to /etc/alternatives.
	alts, err := os.ReadDir("/etc/alternatives")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	files = append(files, dir("etc/alternatives", 0o755))
	for _, a := range alts { // sorted by name
		if a.Type()&fs.ModeSymlink == 0 {
			continue // its README
		}
		to, err := os.Readlink(filepath.Join("/etc/alternatives", a.Name()))
		if err != nil {
			return nil, err
		}
		files = append(files, link(filepath.Join("etc/alternatives", a.Name()), to))
	}
	return files, nil
})

// imageName is the image's name, tagged with a digest of its content.
func imageName() string {
	files, err := rootfs()
	if err != nil {
		return imageRepo + ":unreadable"
	}
	h := sha256.New()
	for _, e := range files {
		fmt.Fprintf(h, "%s\x00%v\x00%s\x00%d\x00", e.path, e.mode, e.link, len(e.data))
		h.Write(e.data)
	}
	return imageRepo + ":" + hex.EncodeToString(h.Sum(nil))[:16]
}

// importImage writes the root file system in a directory of its own and
// imports it as name.
func importImage(name string) error {
	files, err := rootfs()
	if err != nil {
		return err
	}
	script, err := sharedScript("import-image.sh")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "dsh-k8stest-rootfs")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, e := range files {
		path := filepath.Join(dir, e.path)
		switch {
		case e.mode&os.ModeSymlink != 0:
			err = os.Symlink(e.link, path)
		case e.mode.IsDir():
			err = os.Mkdir(path, 0o700)
		default:
			err = os.WriteFile(path, e.data, 0o600)
		}
		if err == nil && e.mode&os.ModeSymlink == 0 {
			err = os.Chmod(path, e.mode) // whatever the umask
		}
		if err != nil {
			return err
		}
	}
	var out bytes.Buffer
	err = testwait.Call("import-image.sh", func(ctx context.Context) error {
		cmd := exec.CommandContext(ctx, "bash", script, dir, name)
		cmd.Stdout, cmd.Stderr = &out, &out
		return cmd.Run()
	})
	if err != nil {
		return fmt.Errorf("%s %s %s: %v\n%s", script, dir, name, err, out.Bytes())
	}
	return nil
}
