//go:build unix && !linux

package proc

import (
	"os/exec"
	"syscall"

	"github.com/agiraph/agiraph/sandbox"
)

const weakness = "no PID namespace on this system: only the process group is killed, and a process that leaves it survives"

func enforced() bool { return false }

func contain(cmd *exec.Cmd, _ sandbox.Policy) bool {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	return false
}

func killMarked(string) {}
