package remote

import (
	"io"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// sshStream is a session's stdio: the stream to the far side's executor.
type sshStream struct {
	client        *ssh.Client
	sess          *ssh.Session
	in            io.WriteCloser
	out           io.Reader
	wait          time.Duration
	stopKeepAlive func()
	once          sync.Once
	exitWatch
}

// startSession starts cmd on a new session of client.
func startSession(client *ssh.Client, cmd string, stderr io.Writer) (*sshStream, error) {
	sess, err := client.NewSession()
	if err != nil {
		return nil, err
	}
	in, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	out, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	if stderr != nil {
		sess.Stderr = stderr
	}
	if err := sess.Start(cmd); err != nil {
		sess.Close()
		return nil, err
	}
	st := &sshStream{client: client, sess: sess, in: in, out: out, stopKeepAlive: func() {}}
	st.watch(sess.Wait)
	return st, nil
}

func (s *sshStream) Read(p []byte) (int, error)  { return s.out.Read(p) }
func (s *sshStream) Write(p []byte) (int, error) { return s.in.Write(p) }

// Close ends the far side's stdin (it closes its executor and exits),
// waits for the session to end, at most the wait delay, and closes the
// connection.
func (s *sshStream) Close() error {
	s.once.Do(func() {
		s.stopKeepAlive()
		s.in.Close()
		select {
		case <-s.exited:
		case <-time.After(s.wait):
		}
		s.client.Close()
		<-s.exited
	})
	return nil
}
