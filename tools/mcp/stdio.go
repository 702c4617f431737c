package mcp

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agiraph/agiraph/internal/proc"
	"github.com/agiraph/agiraph/sandbox"
)

const (
	// stopGrace is how long a command has to exit once its stdin is closed, before it is
	// killed.
	stopGrace = 2 * time.Second
	// stderrKept is how much of a command's stderr is kept; stderrQuoted how much of it an
	// error quotes.
	stderrKept   = 4 << 10
	stderrQuoted = 1 << 10
)

// command is the started process of a server over stdio.
type command struct {
	p      *proc.Process
	stderr *proc.Tail
	done   chan struct{} // closed once it has exited and what it left is killed
	err    error         // how it exited, once done is closed
}

// start starts s's command, contained and sandboxed (internal/proc), and returns it with the
// transport over its stdin and stdout.
func start(s Server) (*command, sdk.Transport, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = inR.Close() // unused: the error before is the one to report
		_ = inW.Close()
		return nil, nil, err
	}
	cmd := exec.Command(s.Command[0], s.Command[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Stdin, cmd.Stdout = inR, outW
	c := &command{stderr: proc.NewTail(stderrKept), done: make(chan struct{})}
	cmd.Stderr = c.stderr
	c.p, err = proc.Start(cmd, policy(s))
	_ = inR.Close() // the child holds its own copies
	_ = outW.Close()
	if err != nil {
		_ = inW.Close() // unused: the start's error is the one to report
		_ = outR.Close()
		return nil, nil, err
	}
	go func() {
		c.err = c.p.Wait()
		close(c.done)
	}()
	return c, &sdk.IOTransport{Reader: outR, Writer: inW}, nil
}

// policy returns the sandbox of s's command: s.Sandbox, or by default writing Dir (when set)
// and a /tmp of its own; either way keeping Env's variables.
func policy(s Server) sandbox.Policy {
	var p sandbox.Policy
	switch {
	case s.Sandbox != nil:
		p = *s.Sandbox
	case s.Dir != "":
		p.Writable = []string{s.Dir}
	}
	return p.Keep(s.Env)
}

// stop ends the command: it has grace to exit (its stdin is closed by now), then it is killed
// with everything it started. It returns once they are gone.
func (c *command) stop(grace time.Duration) {
	if grace > 0 {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-c.done:
		case <-t.C:
		}
	}
	c.p.Kill()
	<-c.done
}

// ended says how the command ended, if it ends within wait, for an error: ": exited (exit
// status 3); its stderr ends with: ..."; "" while it runs.
func (c *command) ended(wait time.Duration) string {
	select {
	case <-c.done:
	default:
		if wait <= 0 {
			return ""
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-c.done:
		case <-t.C:
			return ""
		}
	}
	how := "exit status 0"
	if c.err != nil {
		how = c.err.Error()
	}
	return fmt.Sprintf(": the server exited (%s)", how) + c.stderrEnd()
}

// stderrEnd quotes the end of the command's stderr, for an error; "" when it wrote nothing.
func (c *command) stderrEnd() string {
	s := strings.TrimSpace(c.stderr.String())
	if s == "" {
		return ""
	}
	if len(s) > stderrQuoted {
		s = s[len(s)-stderrQuoted:]
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
			s = s[i+1:] // from a whole line
		}
		s = "…" + strings.ToValidUTF8(s, "")
	}
	return "; its stderr ends with: " + s
}
