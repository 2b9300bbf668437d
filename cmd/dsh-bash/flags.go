package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/observe"
	"github.com/dshgo/dsh/setup"
)

// execFlags are the executor (and result) flags every command that runs
// commands takes.
type execFlags struct {
	defaultTimeoutMs, maxTimeoutMs, maxOutputBytes int
	maxResultChars                                 int
	graceMs, drainDelayMs                          int
	maxTasks, maxTasksPerOwner                     int
	inputProbe                                     bool
	env                                            listFlag
	sandbox                                        sandboxFlags
	remote                                         remoteFlags
	permissions                                    permissionFlags
	config                                         string
	http                                           httpConfig // the file's, for mcp --http
	audit                                          auditFlags // mcp and acp only
	// serving: this is dsh-bash executor, the far side itself. The config
	// file's remote hosts are for clients: a far side that read them
	// would pass commands on (to itself, even).
	serving bool
	// observing, for dsh-bash mcp, is what it tells its operators: the
	// configuration completes it, and it makes the sink of setup's.
	observing *observeFlags
}

func (f *execFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.defaultTimeoutMs, "default-timeout-ms", 0, "timeout of a call that sets none (default 120000)")
	fs.IntVar(&f.maxTimeoutMs, "max-timeout-ms", 0, "cap on any call's timeout (default 600000)")
	fs.IntVar(&f.maxOutputBytes, "max-output-bytes", 0, "bytes of each stream kept in memory (default 64000)")
	fs.IntVar(&f.maxResultChars, "max-result-chars", 0, "characters of one tool result's text, both streams and markers (default 30000)")
	fs.IntVar(&f.graceMs, "grace-ms", 0, "how long a stopped command gets after SIGTERM before SIGKILL (default 3000)")
	fs.IntVar(&f.drainDelayMs, "drain-delay-ms", 0, "how long a call waits, after its shell exited, before adopting what it left running (default 250)")
	fs.IntVar(&f.maxTasks, "max-tasks", 0, "running background tasks allowed in all (default 64)")
	fs.IntVar(&f.maxTasksPerOwner, "max-tasks-per-session", 0, "running background tasks allowed per session (default 16)")
	fs.BoolVar(&f.inputProbe, "input-probe", true, "bash_input answers as soon as the program waits for input again, read from the kernel's state of its processes; false: after 200 ms of quiet, as where that state cannot be read")
	fs.Var(&f.env, "env", "NAME=VALUE added to every command's environment (repeatable)")
	fs.StringVar(&f.config, "config", "", "configuration file (JSON; default $DSH_BASH_CONFIG, else "+cmp.Or(defaultConfigPath(), "none")+" when it exists)")
	f.sandbox.register(fs)
	f.remote.register(fs)
	f.permissions.register(fs)
}

// loadConfig reads the configuration file and completes the flags with it.
func (f *execFlags) loadConfig() error {
	path, explicit := f.config, true
	if path == "" {
		path = os.Getenv("DSH_BASH_CONFIG")
	}
	if path == "" {
		path, explicit = defaultConfigPath(), false
	}
	c, err := loadConfig(path, explicit)
	if err != nil {
		return err
	}
	if !f.serving {
		f.remote.merge(&c.Remote)
	}
	f.permissions.file, f.permissions.configPath = c.Permissions, path
	f.http = c.HTTP
	f.audit.merge(&c.Audit)
	if err := f.sandbox.merge(&c.Sandbox); err != nil {
		return err
	}
	if f.observing != nil {
		if err := f.observing.merge(&c.Metrics); err != nil {
			return fmt.Errorf("config %s: %w", path, err)
		}
		f.sandbox.hidden = append(f.sandbox.hidden, f.observing.serverPaths()...)
	}
	// A jail must not read, or change, what configures its server: its
	// permission rules, its remote hosts, its sandbox.
	f.sandbox.hidden = append(f.sandbox.hidden, ownConfigPaths(path)...)
	f.sandbox.hidden = append(f.sandbox.hidden, f.audit.hidden()...)
	return nil
}

// ownConfigPaths are dsh-bash's configuration file and directory, but for
// those the sandbox hides anyway (in its own list, or in a directory
// listed).
func ownConfigPaths(path string) []string {
	var paths []string
	if path != "" {
		if abs, err := filepath.Abs(path); err == nil {
			paths = append(paths, abs)
		}
	}
	if def := defaultConfigPath(); def != "" {
		paths = append(paths, filepath.Dir(def))
	}
	return setup.NotHidden(paths)
}

// executor cleans up after dsh-bash processes that died without cleaning up
// (SIGKILL), then makes the executor. Errors and warnings are reported on
// stderr, with the subcommand's name; the exit status is 0, 2 for bad
// usage, 1 when the executor cannot be made here (no sandbox under
// --sandbox=on, a far side that cannot be reached).
func (f *execFlags) executor(ctx context.Context, name string, opts *local.Options, stderr io.Writer) (*setup.Setup, int) {
	s, err := f.newExecutor(ctx, name, opts, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash %s: %v\n", name, err)
		return nil, exitCode(err)
	}
	return s, 0
}

// newExecutor is executor, returning the error (a usageError or a
// *setup.ConfigError for bad usage) where executor reports it. Warnings
// and what the clean-up removed still go to stderr.
func (f *execFlags) newExecutor(ctx context.Context, name string, opts *local.Options, stderr io.Writer) (*setup.Setup, error) {
	if err := f.checkValues(); err != nil {
		return nil, err
	}
	if err := f.loadConfig(); err != nil {
		return nil, usageErr(err)
	}
	sweepStale(ctx, name, opts.SpillDir, stderr)
	if err := f.inapplicable(); err != nil {
		return nil, usageErr(err)
	}
	cfg, err := f.setupConfig(opts)
	if err != nil {
		return nil, err
	}
	// What the operators are told: the metrics (mcp) and the audit log
	// (mcp, acp), through setup to the front end (Setup.Observe).
	so := &setup.Options{Stderr: stderr, Observe: f.audit.sink()}
	var built atomic.Pointer[setup.Setup] // for the metrics of its warm pool
	if f.observing != nil {
		var pool func() (int, int)
		if cfg.Sandbox.Warm > 0 {
			pool = func() (int, int) {
				if s := built.Load(); s != nil {
					return s.PoolStatus()
				}
				return 0, cfg.Sandbox.Warm
			}
		}
		so.Observe = observe.Tee(f.observing.sink(pool), so.Observe)
	}
	s, err := setup.New(ctx, cfg, so)
	if err != nil {
		return nil, err
	}
	built.Store(s)
	for _, w := range s.Warnings() {
		fmt.Fprintf(stderr, "dsh-bash %s: %s\n", name, w)
	}
	return s, nil
}

// inapplicable refuses a flag given on the command line that the other
// settings leave without effect, instead of ignoring it silently.
func (f *execFlags) inapplicable() error {
	var err error
	f.sandbox.fs.Visit(func(fl *flag.Flag) {
		switch {
		case err != nil:
		case (fl.Name == "remote-upload" || fl.Name == "remote-command") && len(f.remote.urls) == 0:
			err = fmt.Errorf("--%s applies to --remote hosts, and none is given (--executor-cmd runs its command as it is)", fl.Name)
		case (strings.HasPrefix(fl.Name, "k8s-") || fl.Name == "kubeconfig") && !f.remote.isK8s():
			err = fmt.Errorf("--%s applies to a --remote k8s://NAMESPACE, and none is given", fl.Name)
		case strings.HasPrefix(fl.Name, "sandbox-") && f.sandbox.mode == "off":
			err = fmt.Errorf("--%s has no effect with --sandbox=off", fl.Name)
		}
	})
	return err
}

// checkCwd refuses a --cwd that is not a directory: a usage error, never
// a reason to run without the sandbox.
func checkCwd(name, cwd string, stderr io.Writer) bool {
	if cwd == "" {
		return true
	}
	fi, err := os.Stat(cwd)
	if err == nil && !fi.IsDir() {
		err = errors.New("not a directory")
	}
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash %s: --cwd %s: %v\n", name, cwd, unwrapPath(err))
		return false
	}
	return true
}

// unwrapPath is the system's reason in a *fs.PathError, which names the
// path again.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// options turns the flags into executor options (zero: the default).
func (f *execFlags) options() *local.Options {
	return &local.Options{
		Timeout:        time.Duration(f.defaultTimeoutMs) * time.Millisecond,
		MaxTimeout:     time.Duration(f.maxTimeoutMs) * time.Millisecond,
		MaxOutputBytes: f.maxOutputBytes,
		Grace:          time.Duration(f.graceMs) * time.Millisecond,
		DrainDelay:     time.Duration(f.drainDelayMs) * time.Millisecond,
		MaxTasks:       f.maxTasks, MaxTasksPerOwner: f.maxTasksPerOwner,
		Env:          f.env,
		NoInputProbe: !f.inputProbe,
	}
}

// newFlags makes the flag set of a subcommand, with the executor flags.
func newFlags(name string, stderr io.Writer) (*flag.FlagSet, *execFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	// The flag package calls Usage after a bad flag too: the full list is
	// for -h alone (see parseFlags).
	fs.Usage = func() {}
	ef := &execFlags{}
	ef.register(fs)
	return fs, ef
}

// parseFlags parses args. done says that the command ends here, with
// code: 0 after -h or --help (the subcommand's flags printed on stdout), 2
// after a bad flag (which the flag package has named on stderr; one line
// says where the flags are listed).
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, done bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(stdout, "usage of dsh-bash %s:\n", fs.Name())
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0, true
	case err != nil:
		fmt.Fprintf(stderr, "dsh-bash %s: run 'dsh-bash %s -h' for its flags, 'dsh-bash help' for the commands\n", fs.Name(), fs.Name())
		return 2, true
	}
	return 0, false
}

// parseNoArgs parses args for a subcommand that takes flags only, as
// parseFlags does.
func parseNoArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, done bool) {
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code, done
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "dsh-bash %s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return 2, true
	}
	return 0, false
}

// warnLogger is the servers' diagnostics log: warnings and errors, on stderr.
func warnLogger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// closeExecutor closes the executor and the proxy, saying on stderr what
// it could not clean up (a spill directory a command replaced, a cgroup
// still holding processes).
func closeExecutor(name string, s *setup.Setup, stderr io.Writer) {
	if err := s.Close(); err != nil {
		fmt.Fprintf(stderr, "dsh-bash %s: %v\n", name, err)
	}
}

// setupConfig is the configuration the flags give. The sandbox flags apply
// where commands run: with a remote executor, they belong on the far
// side's dsh-bash executor.
func (f *execFlags) setupConfig(opts *local.Options) (*setup.Config, error) {
	cfg := &setup.Config{Local: opts, Permissions: f.permissions.config(), Remote: f.remote.config()}
	if f.remote.active() {
		if f.sandbox.given() || f.sandbox.mode != "auto" && f.sandbox.mode != "off" {
			// "on" (or a layer) from $DSH_BASH_SANDBOX or the configuration file too: the
			// user asked for a sandbox that this process cannot give.
			return nil, usageErr(setup.ErrSandboxElsewhere)
		}
		cfg.Sandbox.Mode = f.sandbox.mode
		return cfg, nil
	}
	var err error
	cfg.Sandbox, err = f.sandbox.config()
	return cfg, err
}

// usageError marks an error in what the user asked for (exit status 2),
// as opposed to one of the machine or the network (1).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usageErr(err error) error { return usageError{err} }

// exitCode is 2 for a usage error (the configuration's too), else 1.
func exitCode(err error) int {
	var ue usageError
	var ce *setup.ConfigError
	if errors.As(err, &ue) || errors.As(err, &ce) {
		return 2
	}
	return 1
}
