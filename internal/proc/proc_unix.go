//go:build unix

package proc

import (
	"os"
	"syscall"
)

// Signal sends sig to the process's group: the process and the descendants that stayed in its
// group (with a PID namespace, bwrap and everything in the namespace that did not leave it).
func (p *Process) Signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return p.Cmd.Process.Signal(sig)
	}
	return syscall.Kill(-p.Cmd.Process.Pid, s)
}

// Kill kills the process and every process it started, at once (SIGKILL). It may be called
// after the process ended, to kill what it left behind, and more than once.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	if !p.Contained {
		killMarked(p.mark)
	}
}
