//go:build !linux

package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

var interrupt = os.Interrupt

type account struct{}

func serverUser() (*account, error) {
	return nil, fmt.Errorf("%w: the test cluster runs on Linux only (this is %s)", errUnavailable, runtime.GOOS)
}

func (a *account) own(string) error { return nil }

func (a *account) attr() *syscall.SysProcAttr { return nil }

func startTied(cmd *exec.Cmd) (func(), error) { return func() {}, cmd.Start() }
