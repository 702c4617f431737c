// Package sandbox says what an agent's processes may reach: the commands of the bash tool, and
// CLI agents. A [Policy] is enforced where the system can (Linux with bubblewrap, see
// internal/proc): the file system is read-only except the paths the policy makes writable and
// a temporary folder of the process's own, the network is cut off when the policy says so, and
// the environment loses what looks like a secret (API keys, tokens, passwords) unless the
// policy keeps it. Where bubblewrap cannot run, only the environment is cleaned, and the
// process's start event says the rest is not enforced.
//
// It does not protect against what the kernel lets any process do: reading files the server's
// user can read (the file system stays visible, read-only), using the CPU and memory, or, with
// the network on, reaching anything the machine can reach. Run the server as a user with no
// more rights than its agents need, or in a container or VM, when agents are not trusted.
package sandbox

import (
	"slices"
	"strings"
)

// Policy is what an agent process may reach.
type Policy struct {
	// Off runs the process with the server's own rights: the whole file system writable, the
	// network, the environment as it is.
	Off bool
	// Writable are the paths (folders or files) the process may write, besides its own
	// temporary folder (/tmp); everything else it sees read-only.
	Writable []string
	// Readable are paths shown read-only even where the sandbox would hide them: under /tmp,
	// which the process gets empty, its own. (The rest of the file system is shown read-only.)
	Readable []string
	// NoNetwork cuts the process off the network: it has a loopback interface of its own only.
	NoNetwork bool
	// KeepEnv names environment variables kept although they look like secrets.
	KeepEnv []string
}

// secretish are the parts of a variable's name that make it look like a secret.
var secretish = []string{"API_KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE_KEY", "ACCESS_KEY", "SESSION_KEY"}

// Secret reports whether the environment variable name looks like it holds a secret.
func Secret(name string) bool {
	up := strings.ToUpper(name)
	return slices.ContainsFunc(secretish, func(s string) bool { return strings.Contains(up, s) }) ||
		strings.HasPrefix(up, "AWS_") || up == "GOOGLE_APPLICATION_CREDENTIALS"
}

// Env returns env ("KEY=value" entries) without the variables that look like secrets, except
// those the policy keeps; with the policy off, env as it is.
func (p Policy) Env(env []string) []string {
	if p.Off {
		return env
	}
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if Secret(name) && !slices.Contains(p.KeepEnv, name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
