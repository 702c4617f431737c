package replay

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/mcp"
)

// who names an assignment's participant: "coordinator", or the worker with its node and attempt,
// "w1 n2#1". The assignment's id ends in the attempt's number (see nodes' attemptID).
func who(a runtime.Assignment) string {
	if a.Node == "" {
		return a.Worker
	}
	return fmt.Sprintf("%s %s#%s", a.Worker, a.Node, a.ID[strings.LastIndex(a.ID, ".")+1:])
}

type whoKey struct{}

// whoOf returns the participant ctx runs for ("squad": none, a call outside an assignment).
func whoOf(ctx context.Context) string {
	if w, ok := ctx.Value(whoKey{}).(string); ok {
		return w
	}
	return "squad"
}

// outside says whether t reaches outside the run, so that its calls are recorded: bash, the web
// tools and MCP servers' tools. The file tools are not: their effects replay.
func outside(t tools.Tool) bool {
	return t.Name == "bash" || strings.HasPrefix(t.Name, "web_") || strings.Contains(t.Name, mcp.Separator)
}

// participants wraps runtimes so that their calls know their participant, and their tools go
// through tool: the outside ones of a model loop of the squad's (kind harnessed), every one of a
// CLI agent's, whose calls a replay makes again (see player.stream).
type participants struct {
	tool func(who string, t tools.Tool) tools.Tool
	// mail, if set, wraps the assignment's mailbox (ctx is the assignment's).
	mail func(ctx context.Context, who string, a runtime.Assignment) runtime.Mailbox
}

func (p participants) wrap(kind string, rt runtime.Runtime) runtime.Runtime {
	return runtimeFunc(func(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
		w := who(a)
		ctx = context.WithValue(ctx, whoKey{}, w)
		ts := make([]tools.Tool, len(a.Tools))
		for i, t := range a.Tools {
			if kind != nodes.Harnessed || outside(t) {
				t = p.tool(w, t)
			}
			ts[i] = t
		}
		a.Tools = ts
		if p.mail != nil && a.Mailbox != nil {
			a.Mailbox = p.mail(ctx, w, a)
		}
		return rt.Run(ctx, a, sink)
	})
}

type runtimeFunc func(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error)

func (f runtimeFunc) Run(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
	return f(ctx, a, sink)
}

// counter numbers each participant's calls of a kind, from 1.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) next(kind, who string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[kind+" "+who]++
	return c.n[kind+" "+who]
}

// secrets match the providers' and search backends' API keys and bearer tokens.
var secrets = regexp.MustCompile(`sk-ant-[A-Za-z0-9_-]{8,}|sk-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{30,}|gsk_[A-Za-z0-9]{20,}|xai-[A-Za-z0-9]{20,}|tvly-[A-Za-z0-9_-]{10,}|(?i:bearer\s+)[A-Za-z0-9._~+/=-]{8,}`)

// keyName matches the names of the environment variables that hold keys and tokens
// (ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN, AGIRAPH_TOKEN, AWS_SECRET_ACCESS_KEY, ...): their
// values are removed wherever they appear.
var keyName = regexp.MustCompile(`(?i)((^|_)(API_?KEY|KEY|TOKEN|SECRET|SECRET_ACCESS_KEY|CREDENTIALS?)|PASSWORD|PASSWD)$`)

// redactor removes secrets from text: the values of the key variables and whatever matches
// secrets. It also writes the agent's home folder, which differs from a recording to its
// replay, as {home}.
type redactor struct{ values, home []string }

// at returns r writing home as {home}: as given, and as an absolute path.
func (r redactor) at(home string) redactor {
	r.home = []string{home}
	if abs, err := filepath.Abs(home); err == nil && abs != home {
		r.home = []string{abs, home} // the longer first
	}
	return r
}

// newRedactor returns a redactor of the values of environ's ("NAME=value", as os.Environ
// gives them) key variables.
func newRedactor(environ []string) redactor {
	var r redactor
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if keyName.MatchString(name) && len(value) >= 4 {
			r.values = append(r.values, value)
		}
	}
	return r
}

const (
	redacted = "[REDACTED]"
	homeMark = "{home}"
)

func (r redactor) clean(s string) string {
	for _, v := range r.values {
		s = strings.ReplaceAll(s, v, redacted)
	}
	for _, h := range r.home {
		s = strings.ReplaceAll(s, h, homeMark)
	}
	if !mayHoldSecret(s) {
		return s
	}
	return secrets.ReplaceAllString(s, redacted)
}

// restore writes {home} back as the home's folder: in what a replay does again.
func (r redactor) restore(s string) string {
	if len(r.home) == 0 {
		return s
	}
	return strings.ReplaceAll(s, homeMark, r.home[0])
}

// mayHoldSecret says whether s has what every match of secrets begins with: it spares the
// expression's run over the many long requests that have none.
func mayHoldSecret(s string) bool {
	for _, p := range []string{"sk-", "AIza", "gsk_", "xai-", "tvly-", "earer", "EARER"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
