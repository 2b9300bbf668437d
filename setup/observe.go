package setup

import (
	"fmt"

	"github.com/dshgo/dsh/bash/remote"
	"github.com/dshgo/dsh/bash/remote/k8s"
	"github.com/dshgo/dsh/observe"
)

// Observe is the sink New was given (Options.Observe), for the front end
// to tell its own events to.
func (s *Setup) Observe() observe.Sink { return s.observe }

// Containment says where the sessions' commands run and fenced how, as
// the operators' events of a session's start say it
// (observe.SessionStart): "sandbox (jail)", "sandbox (landlock layer)",
// "none", "pods in namespace NS", "remote HOST (its containment)",
// "remote fleet of N hosts".
func (s *Setup) Containment() string {
	switch re := s.exec.(type) {
	case *remote.Executor:
		h := re.Hello()
		return fmt.Sprintf("remote %s (%s)", h.Host, h.Containment)
	case *k8s.Executor:
		return "pods in namespace " + re.Namespace()
	case *remote.Fleet:
		return fmt.Sprintf("remote fleet of %d hosts", len(re.Hosts()))
	}
	switch s.Layer() {
	case "":
		return "none"
	case "landlock":
		return "sandbox (landlock layer)"
	}
	return "sandbox (" + s.Layer() + ")"
}
