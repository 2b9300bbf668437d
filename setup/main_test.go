package setup

import (
	"os"
	"testing"

	"github.com/dshgo/dsh/bash/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the jails' agent is the test binary, started again
	os.Exit(m.Run())
}
