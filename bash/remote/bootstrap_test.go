//go:build linux

package remote

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/internal/testwait"
)

// TestUpload: a host without dsh-bash gets the running binary (this test
// binary, which serves when run as "dsh-bash executor CONFIG"), once,
// checked by hash; without Upload the error says what is missing.
func TestUpload(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	cfg, err := json.Marshal(serverConfig{Config: bashtest.Config{Cwd: t.TempDir()}, SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := syntax.Quote(string(cfg), syntax.LangBash)
	d := s.dialer("dsh-bash executor " + q)
	d.Stderr = nil
	cache := t.TempDir()
	d.CacheDir = cache

	_, err = dialErr(d)
	if err == nil || !strings.Contains(err.Error(), "is dsh-bash installed there? --remote-upload copies this one") {
		t.Fatalf("without Upload on a host without dsh-bash: %v", err)
	}

	d.Upload = true
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sum, err := fileHash(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(cache, sum, "dsh-bash")
	var marked time.Time
	for try := 0; try < 2; try++ {
		e := dialT(t, d.Dial, &Options{Host: d.Name()})
		spec := resolve(t, e, "echo uploaded", "")
		if res, err := runSpec(e, spec); err != nil || res.Stdout.Text != "uploaded\n" {
			t.Errorf("a run through the uploaded binary: %+v, %v", res, err)
		}
		e.Close()
		fi, err := os.Stat(bin)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("the uploaded binary: %v, %v", fi, err)
		}
		if try == 0 {
			marked = fi.ModTime().Add(-time.Hour) // marks this copy
			os.Chtimes(bin, marked, marked)
		} else if !fi.ModTime().Equal(marked) {
			t.Errorf("the binary was uploaded again")
		}
	}
	entries, _ := os.ReadDir(filepath.Join(cache, sum))
	if len(entries) != 1 {
		t.Errorf("the cache holds %d entries, want the binary alone (no temporary file left)", len(entries))
	}
	// A cache others may write to could hold a planted binary: not used.
	os.Chmod(cache, 0o777)
	if _, err := dialErr(d); err == nil || !strings.Contains(err.Error(), "the cache directory is not yours alone") {
		t.Errorf("a cache directory others may write to: %v", err)
	}
	d.CacheDir = `/tmp/x"; touch /tmp/pwned; "`
	if _, err := dialErr(d); err == nil || !strings.Contains(err.Error(), "may not hold quotes") {
		t.Errorf("a cache directory that breaks out of its quotes: %v", err)
	}
}

// dialErr dials d, which may fail, within testwait.Limit.
func dialErr(d *SSH) (*Executor, error) {
	return testwait.Reply("hello of "+d.Name(), func(ctx context.Context) (*Executor, error) {
		return Dial(ctx, d.Dial, &Options{Host: d.Name()})
	})
}

func TestSameSystem(t *testing.T) {
	t.Parallel()
	if err := sameSystem("Linux x86_64"); err != nil && strings.Contains(err.Error(), "amd64") {
		t.Skip("not linux/amd64")
	}
	if err := sameSystem("Darwin arm64"); err == nil || !strings.Contains(err.Error(), "it runs Darwin arm64") {
		t.Errorf("Darwin arm64 accepted: %v", err)
	}
}
