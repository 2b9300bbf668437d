package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/dshgo/dsh/bash"
	"golang.org/x/sys/unix"
)

// The agent and the host talk over a SOCK_SEQPACKET socket pair: one JSON
// message per packet, with descriptors passed alongside (SCM_RIGHTS).

// spawnMsg asks the agent to start one shell. Its descriptors, in order:
// stdout, stderr, NExtra extra files (fd 3, 4, …), the cgroup directory
// when Cgroup is set, then stdin when Stdin is set (else the shell's stdin
// is /dev/null).
type spawnMsg struct {
	ID     uint64   `json:"id"`
	Path   string   `json:"path"`
	Args   []string `json:"args"`
	Dir    string   `json:"dir"`
	Env    []string `json:"env"`
	NExtra int      `json:"nextra"`
	Cgroup bool     `json:"cgroup"`
	Setsid bool     `json:"setsid"`
	Stdin  bool     `json:"stdin,omitempty"`
	// Setctty: stdin is a terminal, to be the controlling terminal of the
	// shell's new session (with Setsid).
	Setctty bool `json:"setctty,omitempty"`
}

// agentMsg is the agent's answer: first whether the shell started (with its
// pidfd), later how it ended (Exited).
type agentMsg struct {
	ID      uint64 `json:"id"`
	Err     string `json:"err,omitempty"`
	Errno   int    `json:"errno,omitempty"`
	Workdir bool   `json:"workdir,omitempty"` // the error is the working directory's
	Exited  bool   `json:"exited,omitempty"`
	Code    int    `json:"code"`
	Signal  int    `json:"signal,omitempty"`
	Started bool   `json:"started,omitempty"`
	// Idle: the first message of a pooled jail's agent (agentConfig.Pooled),
	// which is up and waits for a session to claim it; a jail's comes
	// with the jail's mount namespace, into which the host binds the
	// session's workspace at the claim. The claim is an agentConfig, the
	// Landlock layer's with its seccomp filter; the agent's next message
	// says it is ready, as a fresh agent's first.
	Idle    bool  `json:"idle,omitempty"`
	Skipped []int `json:"skipped,omitempty"` // ready: the optional forwards it has no listener for
	// In the first message: the fence's listener and sock_diag socket
	// follow the proxy listener (Fence), or why the jail has none
	// (FenceErr: unix sockets are refused instead).
	Fence    bool   `json:"fence,omitempty"`
	FenceErr string `json:"fenceErr,omitempty"`
	// UsernsErr, in the Landlock layer's ready message: why its
	// commands can make user namespaces (see clone3Guard). Else the
	// listener of its forker's clone3 filter follows the fence's
	// descriptors (Clone3), for the host to answer; Forker is the
	// forker's thread id, whose own calls go on.
	UsernsErr string `json:"usernsErr,omitempty"`
	Clone3    bool   `json:"clone3,omitempty"`
	Forker    int    `json:"forker,omitempty"`
	// Refused: a program of the shell's tree refused at its exec (with
	// agentConfig.Deny), before the shell's end.
	Refused *bash.Refusal `json:"refused,omitempty"`
}

// maxPacket bounds one packet. A spawn message longer than this is refused
// with E2BIG, which the local executor answers by passing the command in a
// file instead of argv.
const maxPacket = 192 << 10

// errTooBig: the message does not fit a packet.
var errTooBig = fmt.Errorf("sandbox message: %w", unix.E2BIG)

func sendMsg(fd int, v any, fds []int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > maxPacket {
		return errTooBig
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	for {
		err = unix.Sendmsg(fd, b, oob, nil, 0)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// recvMsg reads one packet into v and returns the descriptors that came
// with it (close-on-exec). io.EOF: the other side is gone.
func recvMsg(fd int, buf []byte, v any) ([]int, error) {
	oob := make([]byte, unix.CmsgSpace(maxMsgFDs*4))
	for {
		n, oobn, flags, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		fds, ferr := parseRights(oob[:oobn])
		switch {
		case n == 0 && oobn == 0:
			return nil, errEOF
		case flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
			closeFDs(fds)
			return nil, errors.New("sandbox message: truncated")
		case ferr != nil:
			closeFDs(fds)
			return nil, ferr
		}
		if err := json.Unmarshal(buf[:n], v); err != nil {
			closeFDs(fds)
			return nil, fmt.Errorf("sandbox message: %w", err)
		}
		return fds, nil
	}
}

var errEOF = errors.New("sandbox agent connection closed")

// maxMsgFDs bounds the descriptors of one message: a spawn's few, or the
// ready message's listeners (the proxy's and the forwards').
const maxMsgFDs = 1 + maxForwards

func parseRights(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		r, err := unix.ParseUnixRights(&m)
		if err != nil {
			closeFDs(fds)
			return nil, err
		}
		fds = append(fds, r...)
	}
	return fds, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// socketPair makes the host's and the agent's ends.
func socketPair() (host *os.File, agent *os.File, err error) {
	p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("make the sandbox socket: %w", err)
	}
	for _, fd := range p {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 1<<20)
	}
	return os.NewFile(uintptr(p[0]), "sandbox-host"), os.NewFile(uintptr(p[1]), "sandbox-agent"), nil
}
