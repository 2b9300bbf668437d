package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"

	"github.com/dshgo/dsh/observe"
	"github.com/dshgo/dsh/observe/audit"
)

// The audit log of dsh-bash mcp and acp (--audit-log PATH, or the
// configuration's "audit": {"log": PATH}): one JSON line per session, call,
// network decision and jail start (package observe/audit). It is opened
// at start (a path that cannot be written stops dsh-bash there), reopened
// on SIGHUP (which then no longer stops dsh-bash), closed last at exit,
// and hidden from every jail. Its failures are said on stderr.

// auditFlags are a serving command's --audit-log and what it opened.
type auditFlags struct {
	path    string // --audit-log, else the configuration's audit.log
	serving bool   // the command takes --audit-log (mcp, acp)

	log     atomic.Pointer[audit.Log] // set once opened
	release func()                    // gives SIGHUP back
}

// auditConfig is the configuration file's "audit" object.
type auditConfig struct {
	Log string `json:"log"` // as --audit-log
}

// register adds --audit-log to a serving command's flags.
func (a *auditFlags) register(fs *flag.FlagSet) {
	a.serving = true
	fs.StringVar(&a.path, "audit-log", "", "append an audit log to `PATH`: a JSON line per session, call, network decision and jail start, without command output and with secrets redacted; reopened on SIGHUP (logrotate)")
}

// merge takes the configuration's audit log, unless --audit-log gave one.
func (a *auditFlags) merge(c *auditConfig) {
	if a.serving && a.path == "" {
		a.path = c.Log
	}
}

// expand makes the configuration's path absolute, as the sandbox's.
func (c *auditConfig) expand(b []byte) error {
	if c.Log == "" {
		return nil
	}
	abs, err := expandPath(c.Log)
	if err != nil {
		return fmt.Errorf("line %d: audit.log: %w", keyLine(b, "log"), err)
	}
	c.Log = abs
	return nil
}

// hidden is the log's path, which no jail may read (the commands of
// every session are in it) nor write.
func (a *auditFlags) hidden() []string {
	if a.path == "" {
		return nil
	}
	abs, err := filepath.Abs(a.path)
	if err != nil {
		return nil
	}
	return []string{abs}
}

// open opens the audit log, if one is asked for, and takes SIGHUP to
// reopen it; its failures are said on stderr with the command's name.
func (a *auditFlags) open(ctx context.Context, name string, stderr io.Writer) error {
	if a.path == "" {
		return nil
	}
	path, err := filepath.Abs(a.path)
	if err != nil {
		return fmt.Errorf("--audit-log: %w", err)
	}
	say := func(format string, args ...any) { fmt.Fprintf(stderr, "dsh-bash "+name+": "+format+"\n", args...) }
	l, err := audit.Open(path, &audit.Options{Errorf: say})
	if err != nil {
		return err
	}
	a.log.Store(l)
	a.release = onHangup(ctx, func() {
		if err := l.Reopen(); err != nil {
			say("%v (still writing to the file it had)", err)
			return
		}
		say("audit log reopened: %s", path)
	})
	return nil
}

// sink records events in the audit log once it is open (events before
// are not recorded). It is made before the configuration file is read,
// which may name the log: nil only for a command that takes no
// --audit-log.
func (a *auditFlags) sink() observe.Sink {
	if !a.serving {
		return nil
	}
	return func(e observe.Event) {
		if l := a.log.Load(); l != nil {
			l.Sink()(e)
		}
	}
}

// close closes the audit log, if open, after what is queued is written.
func (a *auditFlags) close(name string, stderr io.Writer) {
	l := a.log.Load()
	if l == nil {
		return
	}
	a.release()
	if err := l.Close(); err != nil {
		fmt.Fprintf(stderr, "dsh-bash %s: %v\n", name, err)
	}
}
