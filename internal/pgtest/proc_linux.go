package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"
	"sync"
	"syscall"
)

// interrupt asks the server for a fast shutdown.
var interrupt = syscall.SIGINT

// account is the user the server runs as; nil means this process's own.
type account struct {
	name     string
	uid, gid uint32
}

// serverUser returns the user to run the server as: this process's own, or, for root (whom
// PostgreSQL refuses), postgres or else nobody.
func serverUser() (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil {
			return &account{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
		}
	}
	return nil, fmt.Errorf("pgtest: running as root, and neither the user postgres nor nobody exists to run PostgreSQL as (it refuses root)")
}

// own gives the file at p to the account.
func (a *account) own(p string) error {
	if a == nil {
		return nil
	}
	return os.Chown(p, int(a.uid), int(a.gid))
}

// attr makes a command run as the account, and die with this process: the kernel sends it SIGQUIT
// (PostgreSQL's immediate shutdown) when the thread that started it ends.
func (a *account) attr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGQUIT}
	if a != nil {
		attr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: []uint32{}}
	}
	return attr
}

// startTied starts cmd from a thread of its own, which stays alive until release is called: the
// parent-death signal is sent when the starting thread ends, and Go may end a thread that some
// other goroutine locked, so the thread is kept out of the scheduler's hands.
func startTied(cmd *exec.Cmd) (release func(), err error) {
	started := make(chan error)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		started <- cmd.Start()
		<-done
	}()
	if err := <-started; err != nil {
		close(done)
		return nil, err
	}
	return sync.OnceFunc(func() { close(done) }), nil
}
