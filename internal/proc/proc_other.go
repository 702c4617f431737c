//go:build !unix

package proc

import (
	"os"
	"os/exec"

	"github.com/agiraph/agiraph/sandbox"
)

const weakness = "no process groups on this system: only the process itself is killed, and what it started survives"

func enforced() bool { return false }

func contain(*exec.Cmd, sandbox.Policy) bool { return false }

// Signal sends sig to the process (Windows knows only os.Kill).
func (p *Process) Signal(sig os.Signal) error { return p.Cmd.Process.Signal(sig) }

// Kill kills the process.
func (p *Process) Kill() { _ = p.Cmd.Process.Kill() }
