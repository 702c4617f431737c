// Package sandbox says what an agent's processes may reach: the commands of the bash tool, and
// CLI agents. A [Policy] is enforced where the system can (Linux with bubblewrap, see
// internal/proc): the file system is read-only except the paths the policy makes writable and
// a temporary folder of the process's own, the network is cut off when the policy says so, and
// the environment loses what looks like a secret (API keys, tokens, passwords) unless the
// policy keeps it. Where bubblewrap cannot run, only the environment is cleaned, and the
// process's start event says the rest is not enforced.
//
// A CLI agent needs more than its assignment's policy: its working directory and configuration
// folder writable, its API key. [CLI.Policy] adds them, for the agents it knows (Claude Code, Codex,
// Gemini CLI, aider) and
// the variables the agent is given explicitly.
//
// It does not protect against what the kernel lets any process do: reading files the server's
// user can read (the file system stays visible, read-only), using the CPU and memory, or, with
// the network on, reaching anything the machine can reach. Run the server as a user with no
// more rights than its agents need, or in a container or VM, when agents are not trusted.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	// which the process gets empty, its own (its program, the files its arguments name and its
	// PATH are shown without being listed). The rest of the file system is shown read-only.
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

// Keep returns p keeping also the variables of the entries env ("KEY=value"): variables given
// to a process on purpose, secrets or not. A policy off is returned as it is.
func (p Policy) Keep(env []string) Policy {
	if !p.Off {
		p.KeepEnv = append(slices.Clone(p.KeepEnv), names(env)...)
	}
	return p
}

// ErrNoNetwork is wrapped by the error of a CLI agent whose policy cuts the network off: it
// reaches its model through the network.
var ErrNoNetwork = errors.New("sandbox: a CLI agent needs the network to reach its model")

// Agent is what a CLI agent needs from its sandbox besides its working directory.
type Agent struct {
	// ConfigEnv names the variable that sets its configuration and state folder, ConfigDir the
	// folder's default, relative to the home folder.
	ConfigEnv, ConfigDir string
	// Keys are the variables it may authenticate with.
	Keys []string
}

// agents are the CLI agents this package knows, by program name.
var agents = map[string]Agent{
	"claude": {ConfigEnv: "CLAUDE_CONFIG_DIR", ConfigDir: ".claude", Keys: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"}},
	"codex":  {ConfigEnv: "CODEX_HOME", ConfigDir: ".codex", Keys: []string{"OPENAI_API_KEY", "CODEX_API_KEY"}},
	"gemini": {ConfigDir: ".gemini", Keys: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"}},
	"aider":  {ConfigDir: ".aider", Keys: []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY"}},
}

// CLI is a CLI agent about to start.
type CLI struct {
	// Program is its name or path: claude, codex, gemini and aider are known.
	Program string
	// Dir is its working directory; Env its environment ("KEY=value"), in which Given are
	// the entries given to it explicitly.
	Dir        string
	Env, Given []string
}

// Policy returns the policy c runs under: p (its assignment's) letting c also write its
// working directory and, for a known agent, its configuration folder (created when missing),
// and keep the variables it is given and a known agent's keys. change, when not nil, then has
// the last word. A policy that is off stays off; one that cuts the network off is an error
// wrapping [ErrNoNetwork].
func (c CLI) Policy(p Policy, change func(Policy) Policy) (Policy, error) {
	if !p.Off {
		dirs := []string{c.Dir}
		var keep []string
		if agent, ok := agents[filepath.Base(c.Program)]; ok {
			dir, err := agent.folder(c.Env)
			if err != nil {
				return p, err
			}
			dirs = append(dirs, dir)
			keep = append(keep, agent.Keys...)
		}
		for _, d := range dirs {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return p, fmt.Errorf("sandbox: %w", err)
			}
		}
		p = p.Keep(c.Given)
		p.Writable = slices.Clone(p.Writable)
		for _, d := range dirs {
			if !slices.Contains(p.Writable, d) {
				p.Writable = append(p.Writable, d)
			}
		}
		p.KeepEnv = append(p.KeepEnv, keep...)
	}
	if change != nil {
		p = change(p)
	}
	if p.NoNetwork && !p.Off {
		return p, ErrNoNetwork
	}
	return p, nil
}

// folder returns the agent's configuration folder for a process started with env.
func (a Agent) folder(env []string) (string, error) {
	if dir := lookup(env, a.ConfigEnv); a.ConfigEnv != "" && dir != "" {
		return dir, nil
	}
	home := lookup(env, "HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("sandbox: the agent's configuration folder: %w", err)
		}
	}
	return filepath.Join(home, a.ConfigDir), nil
}

// names returns the names of the entries of env ("KEY=value").
func names(env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		out[i], _, _ = strings.Cut(kv, "=")
	}
	return out
}

// lookup returns the value of the last entry of env named name, as a process started with env
// sees it; "" when there is none.
func lookup(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// String says what the policy lets a process reach, for an event.
func (p Policy) String() string {
	if p.Off {
		return "no sandbox"
	}
	s := "sandbox: writes only " + strings.Join(append(slices.Clone(p.Writable), "/tmp (its own)"), ", ")
	if p.NoNetwork {
		s += "; no network"
	}
	if len(p.KeepEnv) > 0 {
		s += "; secrets kept in its environment: " + strings.Join(p.KeepEnv, ", ")
	}
	return s
}
