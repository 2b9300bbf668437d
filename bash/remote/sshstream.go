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

	// writing holds one token while a Write runs: an ssh channel's Write
	// and CloseWrite must not overlap.
	writing chan struct{}
	eof     bool // under the token: stdin is closed
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
	st := &sshStream{client: client, sess: sess, in: in, out: out, stopKeepAlive: func() {}, writing: make(chan struct{}, 1)}
	st.watch(sess.Wait)
	return st, nil
}

func (s *sshStream) Read(p []byte) (int, error) { return s.out.Read(p) }

func (s *sshStream) Write(p []byte) (int, error) {
	s.writing <- struct{}{}
	defer func() { <-s.writing }()
	if s.eof {
		return 0, io.ErrClosedPipe
	}
	return s.in.Write(p)
}

// Close ends the far side's stdin (it closes its executor and exits),
// waits for the session to end, at most the wait delay, and closes the
// connection. A write stuck on a far side that stopped reading is cut
// short by closing the connection, without the courtesy of an EOF.
func (s *sshStream) Close() error {
	s.once.Do(func() {
		s.stopKeepAlive()
		grace := time.NewTimer(s.wait)
		defer grace.Stop()
		select {
		case s.writing <- struct{}{}:
			s.eof = true
			s.in.Close()
			<-s.writing
			select {
			case <-s.exited:
			case <-grace.C:
			}
		case <-grace.C:
		}
		s.client.Close()
		<-s.exited
	})
	return nil
}
