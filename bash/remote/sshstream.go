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
	ownsClient    bool // Close closes the connection, else the session
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

// startSession starts cmd on a new session of client; opened, if set, is
// told of the session as soon as it is open.
func startSession(client *ssh.Client, cmd string, stderr io.Writer, opened func(*ssh.Session)) (*sshStream, error) {
	sess, err := client.NewSession()
	if err != nil {
		return nil, err
	}
	if opened != nil {
		opened(sess)
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
// connection (the session alone when the connection is the caller's). A
// write stuck on a far side that stopped reading is cut short by that
// close, without the courtesy of an EOF.
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
		if s.ownsClient {
			s.client.Close()
		} else {
			s.sess.Close()
		}
		<-s.exited
	})
	return nil
}
