// Package toolbashtest checks the model-facing texts of package toolbash
// over any bash.Executor: Transcript drives the tools through a fixed
// scenario and compares every text the model reads with one golden file,
// testdata/transcript.txtar, which every executor (local, sandboxed,
// remote, a dsh-bash executor process) shares:
//
//	func TestTranscript(t *testing.T) {
//		toolbashtest.Transcript(t, newExec, "../../toolbash/toolbashtest/testdata/transcript.txtar", *update)
//	}
//
// newExec is the executor's bashtest.NewFunc, the one its conformance
// suite (package bash/bashtest) runs with; the executor is made, closed
// and checked for leftovers as that suite does, so the suite's needs of
// the executor and the machine hold here too.
//
// The package sits above the executor seam: bash/bashtest checks the seam
// itself and does not depend on the tools.
//
// The transcript is for Linux; elsewhere this package is empty.
package toolbashtest
