//go:build unix

package autonomous_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/autonomous"
	"github.com/agiraph/agiraph/runtime/runtimetest"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/mcp"
)

// mcpAgent is a script agent whose template uses the MCP server: it copies {{.MCPConfig}},
// its environment and _task.md beside it, then waits to be stopped.
const mcpAgent = `cp "$1" _config.copy
env | grep -E '^(AGIRAPH_MCP_|SEEN_URL=)' | sort > _env.copy
cp _task.md _task.copy
echo ready > _ready
exec sleep 60
`

// scratchFile reads a file of a's scratch directory once the agent has written _ready.
func scratchFile(t *testing.T, a runtime.Assignment, name string) string {
	t.Helper()
	started(t, a, "_ready")
	return readFile(t, filepath.Join(a.Dir.Scratch(), name))
}

// envOf parses "KEY=value" lines.
func envOf(text string) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}

// A template that uses the MCP placeholders gets the assignment's server: {{.MCPURL}} and
// AGIRAPH_MCP_URL name it, AGIRAPH_MCP_TOKEN holds its token, {{.MCPConfig}} is a file outside
// the node's folder naming it without the token, and the leading NAME=value argument sets a
// variable. A client with the token sends a message, asks for a sub-node and publishes: the run
// stops the agent and ends Published with the sub-node; the configuration file is gone.
func TestMCPServerForTemplate(t *testing.T) {
	cmd := append([]string{"SEEN_URL={{.MCPURL}}"}, script(t, mcpAgent)...)
	cmd = append(cmd, "{{.MCPConfig}}")
	rt := autonomous.New(cmd, fast...)
	require.NoError(t, rt.Err())
	a := assignment(t, "Split the survey.")
	box := &runtimetest.Mailbox{}
	a.Mailbox = box
	rec := &recorder{t: t}
	type result struct {
		o   runtime.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		o, err := rt.Run(ctx, a, rec.sink)
		done <- result{o, err}
	}()

	env := envOf(scratchFile(t, a, "_env.copy"))
	url, token := env[autonomous.MCPURLEnv], env[autonomous.MCPTokenEnv]
	require.Regexp(t, `^http://127\.0\.0\.1:\d+/mcp$`, url)
	assert.Equal(t, url, env["SEEN_URL"], "the template's variable is set, with its placeholder")
	assert.Len(t, token, 48)

	var config struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	raw := scratchFile(t, a, "_config.copy")
	require.NoError(t, json.Unmarshal([]byte(raw), &config), raw)
	require.Contains(t, config.MCPServers, "agiraph")
	server := config.MCPServers["agiraph"]
	assert.Equal(t, "http", server.Type)
	assert.Equal(t, url, server.URL)
	assert.Equal(t, map[string]string{"Authorization": "Bearer ${AGIRAPH_MCP_TOKEN}"}, server.Headers)
	assert.NotContains(t, raw, token, "the file holds no token")
	started := rec.of(runtime.Started)
	require.Len(t, started, 1)
	assert.Contains(t, started[0].Text, "the work tools over MCP at "+url)
	assert.Contains(t, scratchFile(t, a, "_task.copy"), `The MCP server "agiraph" gives you the tools of this run`)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	set, err := mcp.Connect(ctx, mcp.Server{Name: "w", URL: url, Headers: map[string]string{"Authorization": "Bearer " + token}})
	require.NoError(t, err)
	defer set.Close()
	reg, err := tools.NewRegistry(set.Tools())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(a.Dir.Scratch(), "survey.md"), []byte("# Survey\n"), 0o644))
	for _, c := range []tools.Call{
		{ID: "1", Name: "w__send_message", Args: json.RawMessage(`{"to": "coordinator", "content": "Starting."}`)},
		{ID: "1b", Name: "w__send_message", Args: json.RawMessage(`{"to": "coordinator", "content": "Still surveying."}`)},
		{ID: "2", Name: "w__create_work_node", Args: json.RawMessage(`{"task": "Survey the north."}`)},
		{ID: "3", Name: "w__publish", Args: json.RawMessage(`{"summary": "survey.md"}`)},
	} {
		res := reg.Run(ctx, []tools.Call{c})[0]
		require.False(t, res.IsError, "%s: %s", c.Name, res.Content)
	}

	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, runtime.Published, r.o.Status)
	assert.Equal(t, "survey.md", r.o.Summary)
	assert.Equal(t, []string{"survey.md"}, r.o.Published)
	assert.Equal(t, []runtime.SubNode{{Task: "Survey the north."}}, r.o.SubNodes)
	// The client, as Codex's and Gemini's, gives no ids of its calls: each send is sent.
	assert.Equal(t, []runtime.Message{{To: "coordinator", Body: "Starting."}, {To: "coordinator", Body: "Still surveying."}}, box.Sent())
	assert.Len(t, rec.of(runtime.MessageSent), 2)
	assertGone(t, a)
}

// The configuration file of {{.MCPConfig}} lives outside the node's folder and is removed when
// the run ends, and the endpoint closes with it.
func TestMCPConfigRemovedAndEndpointClosed(t *testing.T) {
	cmd := append(script(t, `echo "$1" > path.txt; env | grep '^AGIRAPH_MCP_' > _env.copy; echo done > _result.md`), "{{.MCPConfig}}")
	a := assignment(t, "Anything.")
	o, err := autonomous.New(cmd, fast...).Run(context.Background(), a, nil)
	require.NoError(t, err)
	require.Equal(t, runtime.Published, o.Status)
	path := strings.TrimSpace(readFile(t, filepath.Join(a.Dir.Published(), "path.txt")))
	require.NotEmpty(t, path)
	dir, err := filepath.Abs(string(a.Dir))
	require.NoError(t, err)
	assert.False(t, strings.HasPrefix(path, dir+string(filepath.Separator)), "%s is outside %s", path, dir)
	assert.NoFileExists(t, path)
	assert.NoDirExists(t, filepath.Dir(path))

	env := envOf(readFile(t, filepath.Join(a.Dir.Scratch(), "_env.copy")))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = mcp.Connect(ctx, mcp.Server{Name: "w", URL: env[autonomous.MCPURLEnv],
		Headers: map[string]string{"Authorization": "Bearer " + env[autonomous.MCPTokenEnv]}})
	assert.Error(t, err, "the endpoint is closed")
}

// A question through ask_human ends the run Waiting with it.
func TestMCPAskEndsWaiting(t *testing.T) {
	rt := autonomous.New(append(script(t, mcpAgent), "{{.MCPConfig}}"), fast...)
	a := assignment(t, "Pick a colour.")
	done := make(chan runtime.Outcome, 1)
	go func() {
		o, err := rt.Run(context.Background(), a, nil)
		assert.NoError(t, err)
		done <- o
	}()
	env := envOf(scratchFile(t, a, "_env.copy"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	set, err := mcp.Connect(ctx, mcp.Server{Name: "w", URL: env[autonomous.MCPURLEnv],
		Headers: map[string]string{"Authorization": "Bearer " + env[autonomous.MCPTokenEnv]}})
	require.NoError(t, err)
	defer set.Close()
	reg, err := tools.NewRegistry(set.Tools())
	require.NoError(t, err)
	res := reg.Run(ctx, []tools.Call{{ID: "1", Name: "w__ask_human", Args: json.RawMessage(`{"question": "Which colour?"}`)}})[0]
	require.False(t, res.IsError, res.Content)
	o := <-done
	assert.Equal(t, runtime.Waiting, o.Status)
	assert.Equal(t, "Which colour?", o.Question)
	assert.Empty(t, o.Published)
}

// A template without the MCP placeholders gets no server: no variables, no work tools in
// _task.md.
func TestNoMCPWithoutPlaceholders(t *testing.T) {
	cmd := script(t, `env | grep '^AGIRAPH_MCP_' > env.txt; cp _task.md task.txt; echo done > _result.md`)
	a := assignment(t, "Anything.")
	rec := &recorder{t: t}
	_, err := autonomous.New(cmd, fast...).Run(context.Background(), a, rec.sink)
	require.NoError(t, err)
	assert.Empty(t, readFile(t, filepath.Join(a.Dir.Published(), "env.txt")))
	assert.NotContains(t, readFile(t, filepath.Join(a.Dir.Published(), "task.txt")), "# Work tools")
	assert.NotContains(t, rec.of(runtime.Started)[0].Text, "over MCP")
}

// The templates: leading NAME=value arguments set variables and need a program after them;
// Codex's and Gemini's use the MCP server, Aider's and Script's do not.
func TestTemplateMCPAndVariables(t *testing.T) {
	err := autonomous.New([]string{"A=1", "B={{.MCPURL}}"}).Err()
	require.ErrorIs(t, err, autonomous.ErrTemplate)
	assert.Contains(t, err.Error(), "no program")
	assert.NoError(t, autonomous.New([]string{"A=1", "agent", "B=2"}).Err(), "a template with a program after its variables")

	assert.Contains(t, autonomous.Codex(), `mcp_servers.agiraph.url="{{.MCPURL}}"`)
	assert.Contains(t, autonomous.Codex(), `mcp_servers.agiraph.bearer_token_env_var="AGIRAPH_MCP_TOKEN"`)
	assert.Contains(t, autonomous.Codex(), `mcp_servers.agiraph.default_tools_approval_mode="approve"`)
	assert.Equal(t, "GEMINI_CLI_SYSTEM_DEFAULTS_PATH={{.MCPConfig}}", autonomous.Gemini()[0])
	assert.Equal(t, "gemini", autonomous.Gemini()[1])
	for _, cmd := range [][]string{autonomous.Aider(), autonomous.Script("/bin/true")} {
		assert.NotContains(t, strings.Join(cmd, " "), "{{.MCP")
	}
}
