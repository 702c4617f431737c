package proc

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/agiraph/agiraph/sandbox"
)

// ContainEnv set to "group" turns the PID namespace off: containment falls back to the process
// group and the mark.
const ContainEnv = "AGIRAPH_CONTAIN"

const weakness = "no PID namespace (bubblewrap is missing or cannot run here): processes are found by their process group and their environment, and one that leaves both survives"

var (
	bwrapOnce sync.Once
	bwrap     string // the path of a bwrap that works, or ""
)

// namespaces reports the bwrap to contain processes with, trying it once.
func namespaces() string {
	if os.Getenv(ContainEnv) == "group" {
		return ""
	}
	bwrapOnce.Do(func() {
		path, err := exec.LookPath("bwrap")
		if err != nil {
			return
		}
		probe := sandbox.Policy{Writable: []string{os.TempDir()}, NoNetwork: true} // all the features
		if exec.Command(path, append(bwrapArgs(probe, nil), "true")...).Run() == nil {
			bwrap = path
		}
	})
	return bwrap
}

// bwrapArgs are bwrap's arguments before the command: a PID namespace that dies with bwrap, a
// /proc of the namespace, and the file system as it is — or, under a policy, read-only but for
// its writable paths and a /tmp of the process's own where the folders shown and the policy's
// readable paths stay visible, and no network if it says so.
func bwrapArgs(policy sandbox.Policy, shown []string) []string {
	args := []string{"--unshare-pid", "--die-with-parent"}
	if policy.Off {
		args = append(args, "--dev-bind", "/", "/")
	} else {
		args = append(args, "--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/tmp")
		for _, r := range append(shown, policy.Readable...) {
			args = append(args, "--ro-bind", r, r)
		}
		for _, w := range policy.Writable {
			args = append(args, "--bind", w, w)
		}
		if policy.NoNetwork {
			args = append(args, "--unshare-net")
		}
	}
	return append(args, "--proc", "/proc", "--")
}

// enforced reports whether processes start in a PID namespace here, where a sandbox policy is
// enforced.
func enforced() bool { return namespaces() != "" }

// contain prepares cmd: in bwrap's PID namespace when it can, in a process group of its own
// either way. It reports whether the namespace contains it.
func contain(cmd *exec.Cmd, policy sandbox.Policy) bool {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	b := namespaces()
	if b == "" || cmd.Err != nil {
		return false
	}
	path := cmd.Path
	if cmd.Err == nil && !filepath.IsAbs(path) {
		if abs, err := exec.LookPath(path); err == nil {
			path = abs
		}
	}
	var shown []string
	if !policy.Off {
		shown = programFolders(path, cmd.Args[1:], cmd.Env)
		cmd.Env = append(cmd.Env, "TMPDIR=/tmp")
	}
	cmd.Args = append(append([]string{b}, bwrapArgs(policy, shown)...), append([]string{path}, cmd.Args[1:]...)...)
	cmd.Path = b
	return true
}

// programFolders are the folders under /tmp that the sandbox, whose /tmp is the process's own,
// must show for the program to run: those holding the program (and the file its path links to),
// the files its arguments name (a script) and the folders of the PATH in env, each shown whole
// by its top folder under /tmp (a checkout there, say, with the tools it installed).
func programFolders(program string, args, env []string) []string {
	paths := []string{program}
	if real, err := filepath.EvalSymlinks(program); err == nil {
		paths = append(paths, real)
	}
	for _, a := range args {
		if filepath.IsAbs(a) {
			paths = append(paths, a)
		}
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			paths = append(paths, filepath.SplitList(v)...)
		}
	}
	var top []string
	for _, p := range paths {
		rest, ok := strings.CutPrefix(filepath.Clean(p), "/tmp/")
		if !ok {
			continue
		}
		first, _, _ := strings.Cut(rest, "/")
		t := "/tmp/" + first
		if _, err := os.Stat(t); err == nil && !slices.Contains(top, t) {
			top = append(top, t)
		}
	}
	return top
}

// killMarked kills every process whose environment carries mark, and its group, until none is
// left (a process may fork while the others die).
func killMarked(mark string) {
	want := []byte(MarkEnv + "=" + mark + "\x00")
	self := os.Getpid()
	for range 10 {
		found := false
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err != nil || !bytes.Contains(append(env, 0), want) {
				continue
			}
			found = true
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != syscall.Getpgrp() {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if !found {
			return
		}
	}
}
