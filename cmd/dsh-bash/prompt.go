package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/toolbash"
)

// prompter asks the user questions on a terminal (dsh-bash run), one at a
// time, in the order they come. One goroutine reads stdin's lines for the
// process's life: a read cannot be abandoned, so a question whose context
// ends returns at once, and the next question takes the line it would
// have had.
type prompter struct {
	in    io.Reader
	out   io.Writer
	start sync.Once
	lines chan string
	turn  chan struct{} // held by the question on the terminal
}

// newPrompter returns a prompter that reads answers from in and writes
// questions to out.
func newPrompter(in io.Reader, out io.Writer) *prompter {
	return &prompter{in: in, out: out, lines: make(chan string), turn: make(chan struct{}, 1)}
}

// ask writes question to the terminal and returns the line answered. It
// returns ctx's error as soon as ctx is done, waiting for no line, and
// io.EOF at stdin's end.
func (p *prompter) ask(ctx context.Context, question string) (string, error) {
	select {
	case p.turn <- struct{}{}:
		defer func() { <-p.turn }()
	case <-ctx.Done():
		return "", ctx.Err()
	}
	p.start.Do(func() { go readLines(p.in, p.lines) })
	fmt.Fprint(p.out, question)
	select {
	case line, ok := <-p.lines:
		if !ok {
			return "", io.EOF
		}
		return line, nil
	case <-ctx.Done():
		fmt.Fprintln(p.out)
		return "", ctx.Err()
	}
}

// readLines sends each line of in to lines, and closes it at in's end.
func readLines(in io.Reader, lines chan<- string) {
	defer close(lines)
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadString('\n')
		if line != "" || err == nil {
			lines <- line
		}
		if err != nil {
			return
		}
	}
}

// permissionAsker asks p whether to run a command the permission rules
// ask about: y runs once, a allows the prefixes for the run, anything
// else (or stdin's end) rejects.
func permissionAsker(p *prompter) toolbash.Asker {
	return func(ctx context.Context, q toolbash.Question) (toolbash.Answer, error) {
		// Escaped: the terminal would act on what the command holds.
		question := fmt.Sprintf("dsh-bash: this command needs approval: %s\n  %s\n", toolbash.Visible(q.Verdict.Reason), toolbash.Visible(q.Command))
		prompt := "Run it? [y]es once, [N]o"
		if len(q.Verdict.Prefixes) > 0 {
			prompt = fmt.Sprintf("Run it? [y]es once, [a]lways allow %s, [N]o", toolbash.Visible(strings.Join(q.Verdict.Prefixes, ", ")))
		}
		line, err := p.ask(ctx, question+prompt+": ")
		if err == io.EOF {
			return toolbash.Reject, nil
		} else if err != nil {
			return toolbash.Reject, err
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return toolbash.AllowOnce, nil
		case "a", "always":
			if len(q.Verdict.Prefixes) > 0 {
				return toolbash.AllowPrefixes, nil
			}
		}
		return toolbash.Reject, nil
	}
}

// networkAsker asks p about a host that is not on the network allowlist;
// a question whose context ends (the command ended, dsh-bash is exiting)
// is given up.
func networkAsker(p *prompter) func(context.Context, egress.Question) (egress.Decision, error) {
	return func(ctx context.Context, q egress.Question) (egress.Decision, error) {
		line, err := p.ask(ctx, fmt.Sprintf("dsh-bash: the command wants to connect to %s, which is not on the network allowlist.\nAllow? [o]nce, [s]ession (this host, any port), [N]o, [d]eny every new host: ", toolbash.Visible(net.JoinHostPort(q.Host, strconv.Itoa(q.Port)))))
		if err != nil {
			return egress.Deny, err
		}
		return netDecision(line), nil
	}
}

// netDecision reads the user's answer to a network question.
func netDecision(line string) egress.Decision {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "o", "once":
		return egress.AllowOnce
	case "s", "session":
		return egress.AllowSession
	case "d":
		return egress.DenyAllNew
	}
	return egress.Deny
}
