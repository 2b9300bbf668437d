// Package remote runs the executor seam of package bash over any byte
// stream, so that the tools' commands run on another machine, in a
// container or in a pod, with the same text for the model.
//
// The far side runs Serve (`dsh-bash executor` serves its executor, local
// or sandboxed, on its stdin and stdout); this side makes an [Executor]
// over the stream, with [New] for one stream or [Dial] to reconnect when a
// stream ends. A [Command] dials by starting a program whose stdio is the
// stream: `ssh box dsh-bash executor`, `docker exec -i box dsh-bash
// executor`, `kubectl exec -i pod -- dsh-bash executor`.
//
// # Protocol
//
// JSON-RPC 2.0 (github.com/sourcegraph/jsonrpc2), one JSON text per line,
// each at most Options.MaxMessage bytes. The client opens with hello
// (protocol [Version]; the server answers with its version, its
// containment, host and pid) and then calls resolve, run, start, get,
// list, ownerOf, readOutput, kill, writeInput, endOwner and close, one per method of
// the seam. Results carry the executor's typed errors with their fields,
// so that the client rebuilds the same types and the model reads the same
// words. The server pushes notifications: output (a foreground run's live
// output, in order, before its reply) and taskDone (a task's end, before
// the reply of the kill that ended it). A client whose call's context ends
// sends $/cancelRequest, as LSP does; the server cancels the call (a run
// is aborted, as its own context would abort it).
//
// # Bounds
//
// Memory stays bounded on both sides whatever a command prints: results
// and reads hold what the far side's executor holds (its MaxOutputBytes);
// live output waits in a bounded queue per run (ServeOptions
// .MaxPendingOutput), whose oldest bytes are dropped when the link is
// slower than the command (live output is best effort, the result is the
// whole truth); one message is bounded by MaxMessage.
//
// # Faults
//
// When the stream ends the server closes its executor, which kills every
// task it runs. On this side every call is bounded by its context; a call
// whose link fails returns a *bash.LinkError naming the host (with
// InFlight set when the far side may have acted on it); reads, kills and
// lookups of a task lost with its link return a *bash.LinkError naming
// the task, never a made-up status. Task ids are the Executor's own,
// bash-1, bash-2, …, unique across reconnections.
package remote
