// Package proc starts the processes agents run — the bash tool's commands, the Claude Code CLI,
// autonomous CLI agents — so that nothing they start outlives them, whatever it does: a
// command that backgrounds a child, nohups it, moves it to a session of its own (setsid) or
// double-forks is killed with the process that started it.
//
// On Linux, where bubblewrap (bwrap) can run, the process starts in a PID namespace of its own
// (bwrap --unshare-pid --die-with-parent): when it ends, or is killed, the kernel kills every
// process in the namespace. Where bwrap is missing or cannot run (or AGIRAPH_CONTAIN=group asks
// for it), containment is weaker: the process starts in a process group of its own and carries
// a mark in its environment; Kill kills the group and every process whose environment carries
// the mark (found through /proc), which catches setsid and double forks, but not a process
// that clears its environment. Process.Contained says which it is. On other Unix systems only
// the process group is killed; on Windows only the process itself.
//
// A [sandbox.Policy] limits what the process reaches: in bwrap, a read-only file system but for
// the policy's writable paths and a /tmp of its own, and no network when the policy says so;
// everywhere, an environment without what looks like a secret.
package proc

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/agiraph/agiraph/sandbox"
)

// MarkEnv is the environment variable that marks the processes a Process started.
const MarkEnv = "AGIRAPH_PROC"

// Process is a started agent process and what it starts.
type Process struct {
	// Cmd is the command as started; with a PID namespace its Path and Args are bwrap's.
	Cmd *exec.Cmd
	// Contained is true when every descendant dies with the process, whatever it does (a
	// PID namespace of its own); false when Kill finds them as well as it can.
	Contained bool
	mark      string
	policy    sandbox.Policy
}

// Start starts cmd, which must not have been started, contained as well as this system
// allows, within policy. It sets cmd's environment (the process's own when cmd.Env is nil,
// cleaned by the policy, plus the mark), its SysProcAttr, and a WaitDelay when it has none
// (see [Process.Wait]). A writable path of the policy that does not exist is an error.
func Start(cmd *exec.Cmd, policy sandbox.Policy) (*Process, error) {
	if !policy.Off {
		for _, p := range append(slices.Clone(policy.Readable), policy.Writable...) {
			if _, err := os.Stat(p); err != nil {
				return nil, fmt.Errorf("proc: a path of the sandbox: %w", err)
			}
		}
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	p := &Process{Cmd: cmd, mark: hex.EncodeToString(b), policy: policy}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(policy.Env(cmd.Env), MarkEnv+"="+p.mark)
	p.Contained = contain(cmd, policy)
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = waitDelay
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// waitDelay is how long Wait waits, once the process ended, for output that what it left
// behind holds open; Kill then ends them.
const waitDelay = time.Second

// Wait waits for the process to end, then kills what it left behind (see Kill). Output pipes
// that a leftover process held open are closed, and that is not an error.
func (p *Process) Wait() error {
	err := p.Cmd.Wait()
	p.Kill()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil
	}
	return err
}

// Weakness says, for an event, how containment is weaker than a PID namespace; "" when it is
// not.
func (p *Process) Weakness() string {
	if p.Contained {
		return ""
	}
	return weaknessOf(p.policy)
}

// Weakness says, for an event, how the containment of a process started here within policy
// would be weaker than a PID namespace (its sandbox not enforced); "" when it would not be.
func Weakness(policy sandbox.Policy) string {
	if enforced() {
		return ""
	}
	return weaknessOf(policy)
}

func weaknessOf(policy sandbox.Policy) string {
	if policy.Off {
		return weakness
	}
	return weakness + "; the sandbox is not enforced either (only its environment is)"
}
