//go:build linux

package sandbox

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
)

// gitRig is a jail executor and a workspace holding a repository made on
// the host, with git's environment of its own.
type gitRig struct {
	e   *Executor
	ws  string
	env []string
}

// newGitRig makes the rig, skipping where git cannot run (unless CI=true,
// where .ci/run provides it).
func newGitRig(t *testing.T) *gitRig {
	t.Helper()
	home := t.TempDir()
	env := []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
	if why := cannotRun("git", env); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, and .ci/run provides git, but %s", why)
		}
		t.Skipf("git cannot run on this machine: %s", why)
	}
	e, err := newSandbox(t, &Options{Layer: LayerJail, Local: &local.Options{Env: env, Grace: 200 * time.Millisecond},
		Policy: Policy{Home: home}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	r := &gitRig{e: e, ws: t.TempDir(), env: env}
	os.WriteFile(filepath.Join(r.ws, "a.txt"), []byte("a\n"), 0o644)
	onHost(t, r.ws, env, "git init -q . && git add a.txt && git commit -qm host")
	return r
}

// run runs command in owner's session of the workspace.
func (r *gitRig) run(t *testing.T, owner, command string) bash.RunResult {
	t.Helper()
	ctx := context.Background()
	spec, err := r.e.Resolve(ctx, bash.ExecRequest{Command: command, Owner: owner, Workspace: r.ws, Workdir: r.ws, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.e.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// tree lists what the repository's .git holds, each path with "/" for a
// directory.
func (r *gitRig) tree(t *testing.T) []string {
	t.Helper()
	var paths []string
	root := filepath.Join(r.ws, ".git")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			rel += "/"
		}
		paths = append(paths, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// TestGitLeavesNoTrace: sessions in an existing repository leave nothing
// of theirs in its .git: the placeholders they bind (a commondir, a
// config.worktree, info/attributes) are there while a session is, and go
// when the last one ends. The first session to end leaves them to the
// other, whose commands still cannot write them.
func TestGitLeavesNoTrace(t *testing.T) {
	t.Parallel()
	r := newGitRig(t)
	before := r.tree(t)
	if res := r.run(t, "alice", "git status --short && git log -1 --format=%s && cat .git/commondir"); res.ExitCode != 0 || res.Stdout.Text != "host\n." {
		t.Fatalf("alice: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout.Text, res.Stderr.Text)
	}
	r.run(t, "bob", "git log -1 --format=%s")
	if err := r.e.EndOwner(context.Background(), "alice"); err != nil {
		t.Fatal(err)
	}
	const plant = "echo ../evil > .git/commondir; echo '[core]' > .git/config.worktree; echo '* filter=x' > .git/info/attributes"
	if res := r.run(t, "bob", plant+"; git log -1 --format=%s"); res.Stdout.Text != "host\n" || strings.Count(res.Stderr.Text, "Read-only file system") != 3 {
		t.Errorf("bob, once alice's session ended: stdout %q, stderr %q; want each write refused", res.Stdout.Text, res.Stderr.Text)
	}
	if during := r.tree(t); !slices.Contains(during, "commondir") {
		t.Errorf("while bob's session lasts, .git lacks its commondir: %q", during)
	}
	if err := r.e.EndOwner(context.Background(), "bob"); err != nil {
		t.Fatal(err)
	}
	if after := r.tree(t); !slices.Equal(after, before) {
		t.Errorf(".git after the sessions:\n%q\nbefore:\n%q", after, before)
	}
	onHost(t, r.ws, r.env, "git status --short && git log -1 --format=%s | grep -qx host")
}

// TestGitRemovedRepository: a repository a command removes cannot be made
// anew in the sandbox (its config and hooks, the user's, stay read-only),
// and the model reads why, and what to do: after the command that removed
// it, and after each failing one while it is gone. Once the session ends,
// the user's config and hooks are as they were, and nothing of the jail's
// is left.
func TestGitRemovedRepository(t *testing.T) {
	t.Parallel()
	r := newGitRig(t)
	config, _ := os.ReadFile(filepath.Join(r.ws, ".git", "config"))
	hooks, _ := os.ReadDir(filepath.Join(r.ws, ".git", "hooks"))
	const note = "is no longer a git repository, and git init cannot make it one in the sandbox"
	res := r.run(t, "alice", "rm -rf .git; git init -q && git commit -q --allow-empty -m again && git log --format=%s")
	switch {
	case res.ExitCode == 0 && res.Stdout.Text == "again\n":
		// It works: fine too.
	case res.ExitCode == 0 || !strings.Contains(res.Note, note):
		t.Errorf("rm -rf .git, git init, git commit: exit %d, note %q, stdout %q, stderr %q; want it to work, or a note saying why not",
			res.ExitCode, res.Note, res.Stdout.Text, res.Stderr.Text)
	}
	if res := r.run(t, "alice", "git status"); res.ExitCode == 0 || !strings.Contains(res.Note, note) {
		t.Errorf("git status after: exit %d, note %q", res.ExitCode, res.Note)
	}
	if res := r.run(t, "alice", "true"); res.Note != "" {
		t.Errorf("a command that worked got the note again: %q", res.Note)
	}
	if err := r.e.EndOwner(context.Background(), "alice"); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(filepath.Join(r.ws, ".git", "config")); string(after) != string(config) {
		t.Errorf("the user's config changed:\n%s\nwas:\n%s", after, config)
	}
	if after, _ := os.ReadDir(filepath.Join(r.ws, ".git", "hooks")); len(after) != len(hooks) {
		t.Errorf("the user's hooks changed: %d entries, were %d", len(after), len(hooks))
	}
	for _, name := range []string{"commondir", "config.worktree", "info/attributes"} {
		if _, err := os.Lstat(filepath.Join(r.ws, ".git", name)); err == nil {
			t.Errorf("the jail's placeholder .git/%s is left", name)
		}
	}
}
