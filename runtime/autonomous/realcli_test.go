//go:build linux

package autonomous_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/clitest"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/autonomous"
	"github.com/agiraph/agiraph/tools"
)

// These tests run the real Codex and Gemini CLIs through the package's templates against fake
// provider APIs (providertest). .ci/run installs the pinned releases (clitest.Codex and
// clitest.Gemini); where they are missing the tests are skipped, except in CI (CI set), where
// they must run.

// realOptions are the options the real CLIs run with.
var realOptions = []autonomous.Option{autonomous.WithPollInterval(100 * time.Millisecond), autonomous.WithStopGrace(time.Second)}

// agentCLI is what the tests need to know of one real CLI.
type agentCLI struct {
	// command is the package's template, run with the installed binary.
	command []string
	// keyVar is the environment variable that holds the API key.
	keyVar string
	// basePath is what the API's base URL has after the host (the fake's URL too).
	basePath string
	// serve starts the fake API the CLI speaks, answering with fn; the CLI reaches it at url.
	serve func(t *testing.T, fn func(providertest.Request) providertest.Reply) (fake *providertest.Server, url string)
	// env points the CLI at url, with a key or none, away from this machine's configuration.
	env func(t *testing.T, url string, withKey bool) []string
	// wire checks a request of the agent's turns as the CLI sends it.
	wire func(t *testing.T, r providertest.Request)
	// aside answers the CLI's own requests that are not the agent's turns (ok true), if it
	// makes any.
	aside func(r providertest.Request) (providertest.Reply, bool)
	// results returns the tool results a request carries, in order.
	results func(providertest.Request) []string
	// shell runs a command with the CLI's shell tool, background runs one in the background,
	// and write writes a file.
	shell, background func(command string) tools.Call
	write             func(path, content string) tools.Call
	// usage, when set, checks the usage the CLI reports for turns turns of turnUsage.
	usage func(t *testing.T, rec *recorder, turns int)
	// work calls the squad's work tool tool over MCP, by the name the CLI gives it.
	work func(tool string, args map[string]any) tools.Call
	// unreachableError is a part of the error the CLI prints when nothing listens at its API's
	// address.
	unreachableError string
}

// clis are the CLIs the tests run.
var clis = []struct {
	name string
	cli  func(*testing.T) agentCLI
}{{"codex", codexCLI}, {"gemini", geminiCLI}}

func codexCLI(t *testing.T) agentCLI {
	cmd := autonomous.Codex()
	cmd[0] = clitest.Codex.Bin(t, "codex", "CODEX_BIN")
	shell := func(command string) tools.Call {
		args, _ := json.Marshal(map[string]any{"cmd": command, "yield_time_ms": 10000})
		return tools.Call{Name: "exec_command", Args: args}
	}
	return agentCLI{
		command:          cmd,
		keyVar:           "OPENAI_API_KEY",
		basePath:         "/v1",
		unreachableError: "Reconnecting... waiting for network (Connection failed: error sending request)",
		serve: func(t *testing.T, fn func(providertest.Request) providertest.Reply) (*providertest.Server, string) {
			fake := providertest.NewResponsesFunc(t, fn)
			return fake, namespaced(t, fake.URL())
		},
		env: func(t *testing.T, url string, withKey bool) []string {
			// Codex ignores OPENAI_BASE_URL: the endpoint is a model provider in
			// $CODEX_HOME/config.toml.
			home := codexHome(t)
			config := fmt.Sprintf(`model = "gpt-5.5"
model_provider = "agiraph_test"
check_for_update_on_startup = false

[model_providers.agiraph_test]
name = "agiraph test"
base_url = %q
env_key = "OPENAI_API_KEY"
wire_api = "responses"
`, url)
			require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644))
			key := ""
			if withKey {
				key = "sk-test"
			}
			return []string{"CODEX_HOME=" + home, "HOME=" + home, "OPENAI_API_KEY=" + key, "CODEX_API_KEY=", "OPENAI_BASE_URL="}
		},
		wire: func(t *testing.T, r providertest.Request) {
			assert.Equal(t, "POST /v1/responses", r.Method+" "+r.Path)
			assert.Equal(t, "Bearer sk-test", r.Header.Get("Authorization"))
			assert.Equal(t, "gpt-5.5", r.Model)
			assert.True(t, r.Stream, "Codex streams")
			assert.NotEmpty(t, r.Input())
			assert.NotNil(t, r.JSON["tools"])
		},
		results: func(r providertest.Request) []string {
			var out []string
			for _, item := range r.Input() {
				if item["type"] == "function_call_output" {
					out = append(out, text(item["output"]))
				}
			}
			return out
		},
		shell: shell,
		work: func(tool string, args map[string]any) tools.Call {
			// Codex declares the tools of an MCP server in a namespace (mcp__agiraph), or, for
			// a model with tool search (gpt-5.5), lets the model find them with tool_search;
			// either way it runs a call of a tool of the namespace (see namespaced).
			return scripted.Call("mcp__agiraph__"+tool, args)
		},
		background: func(command string) tools.Call {
			// Codex reaps what a command leaves when it returns (its own sandbox), so the
			// command goes on in the foreground while the detached one runs.
			return shell("setsid nohup " + command + " >/dev/null 2>&1 & sleep 600")
		},
		write: func(path, content string) tools.Call {
			return shell(fmt.Sprintf("printf '%%s' %s > %s", quote(content), quote(path)))
		},
		usage: func(t *testing.T, rec *recorder, turns int) {
			// codex exec --json sums the turns' usage in turn.completed, when it got to print
			// it before it was stopped; input_tokens counts the cached ones, as the API does.
			for _, e := range rec.of(runtime.Output) {
				var line struct {
					Type  string         `json:"type"`
					Usage map[string]int `json:"usage"`
				}
				if json.Unmarshal([]byte(e.Text), &line) != nil || line.Type != "turn.completed" {
					continue
				}
				assert.Equal(t, turns*(turnUsage.InputTokens+turnUsage.CacheReadTokens), line.Usage["input_tokens"])
				assert.Equal(t, turns*turnUsage.CacheReadTokens, line.Usage["cached_input_tokens"])
				assert.Equal(t, turns*turnUsage.OutputTokens, line.Usage["output_tokens"])
				return
			}
			t.Log("Codex was stopped before it reported its usage")
		},
	}
}

// namespaced returns the URL of a proxy of the Responses API at url that gives the MCP tools'
// calls of its replies ("mcp__agiraph__publish") the form Codex reads: the tool's name in the
// namespace of its server ("publish" in "mcp__agiraph"), as Codex declares them to the API.
func namespaced(t *testing.T, url string) string {
	target, err := neturl.Parse(url)
	require.NoError(t, err)
	call := regexp.MustCompile(`"name":"(mcp__[a-z0-9_-]+?)__([a-z0-9_]+)"`)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.URL.Path = r.In.URL.Path },
		ModifyResponse: func(res *http.Response) error {
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				return err
			}
			body = call.ReplaceAll(body, []byte(`"name":"$2","namespace":"$1"`))
			res.Body = io.NopCloser(bytes.NewReader(body))
			res.ContentLength = int64(len(body))
			res.Header.Del("Content-Length")
			return nil
		},
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL + target.Path
}

// geminiStream is the path of the agent's turns; geminiRoute the path of the model router's
// requests, which Gemini CLI sends first to choose a model when none is set.
var (
	geminiStream = regexp.MustCompile(`^/v1beta/models/[^/:]+:streamGenerateContent$`)
	geminiRoute  = regexp.MustCompile(`^/v1beta/models/[^/:]+:generateContent$`)
)

func geminiCLI(t *testing.T) agentCLI {
	cmd := autonomous.Gemini()
	require.Contains(t, cmd, "--skip-trust", "Gemini CLI exits (55) in a folder it does not trust, which every node's scratch folder is")
	cmd[slices.Index(cmd, "gemini")] = clitest.Gemini.Bin(t, "gemini", "GEMINI_BIN")
	return agentCLI{
		command:          cmd,
		keyVar:           "GEMINI_API_KEY",
		unreachableError: "failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request",
		serve: func(t *testing.T, fn func(providertest.Request) providertest.Reply) (*providertest.Server, string) {
			fake := providertest.NewGeminiFunc(t, fn)
			return fake, fake.URL()
		},
		env: func(t *testing.T, url string, withKey bool) []string {
			// Gemini CLI takes its endpoint from GOOGLE_GEMINI_BASE_URL once its settings
			// select API-key authentication.
			home := t.TempDir()
			settings := `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}
}
`
			require.NoError(t, os.MkdirAll(filepath.Join(home, ".gemini"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o644))
			key := ""
			if withKey {
				key = "test-key"
			}
			// No GEMINI_CLI_TRUST_WORKSPACE: the template must trust the folder by itself.
			return []string{"HOME=" + home, "GEMINI_API_KEY=" + key, "GOOGLE_API_KEY=", "GOOGLE_GEMINI_BASE_URL=" + url,
				"GEMINI_MODEL=", "GOOGLE_GENAI_USE_VERTEXAI=", "GOOGLE_CLOUD_PROJECT=", "GEMINI_CLI_TRUST_WORKSPACE="}
		},
		wire: func(t *testing.T, r providertest.Request) {
			assert.Equal(t, "POST", r.Method)
			assert.Regexp(t, geminiStream, r.Path)
			assert.Equal(t, "test-key", r.Header.Get("X-Goog-Api-Key"))
			assert.True(t, r.Stream)
			assert.NotEmpty(t, r.Contents())
			assert.NotNil(t, r.JSON["systemInstruction"])
		},
		aside: func(r providertest.Request) (providertest.Reply, bool) {
			// The router asks for a JSON verdict on the task's complexity.
			if !geminiRoute.MatchString(r.Path) {
				return providertest.Reply{}, false
			}
			return providertest.Reply{Text: `{"complexity_reasoning": "A short scripted task.", "complexity_score": 10}`}, true
		},
		results: func(r providertest.Request) []string {
			var out []string
			for _, c := range r.Contents() {
				for _, p := range objects(c["parts"]) {
					if fr, ok := p["functionResponse"].(map[string]any); ok {
						out = append(out, text(fr["response"]))
					}
				}
			}
			return out
		},
		shell: func(command string) tools.Call {
			return scripted.Call("run_shell_command", map[string]any{"command": command, "description": "Run a command."})
		},
		background: func(command string) tools.Call {
			return scripted.Call("run_shell_command", map[string]any{"command": command, "description": "Start a command.", "is_background": true})
		},
		write: func(path, content string) tools.Call {
			return scripted.Call("write_file", map[string]any{"file_path": path, "content": content})
		},
		work: func(tool string, args map[string]any) tools.Call {
			return scripted.Call("mcp_agiraph_"+tool, args)
		},
	}
}

// codexHome returns a new CODEX_HOME, removed when the test ends. It is not under the
// temporary directory: there Codex refuses to create the helper its sandbox runs commands
// with, and every command fails ("execvp codex-linux-sandbox").
func codexHome(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(clitest.RepoRoot(t), ".cache", "codex-home")
	if strings.HasPrefix(dir, "/tmp/") { // a checkout under /tmp: use a folder Codex accepts
		dir = filepath.Join("/var/tmp", "agiraph-codex-home")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	dir, err := filepath.EvalSymlinks(dir) // the sandbox binds CODEX_HOME by a path without links
	require.NoError(t, err)
	home, err := os.MkdirTemp(dir, "test")
	require.NoError(t, err)
	t.Cleanup(func() {
		// Codex's processes may still be dying, and writing, as the test ends.
		for deadline := time.Now().Add(5 * time.Second); os.RemoveAll(home) != nil && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
	})
	return home
}

// text returns a decoded JSON value as text: a string as it is, anything else as JSON.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// objects returns the objects of a decoded JSON array.
func objects(v any) []map[string]any {
	arr, _ := v.([]any)
	var out []map[string]any
	for _, m := range arr {
		if mm, ok := m.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

// quote quotes s for sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// turnUsage is the usage of every scripted turn.
var turnUsage = providers.Usage{InputTokens: 1000, CacheReadTokens: 200, OutputTokens: 50}

// conversation scripts the agent's turns: the request that carries n tool results gets
// steps[n]; a request past the steps ends the turn with "Done.". The CLI's other requests go
// to its aside; one it does not answer fails the test.
type conversation struct {
	t     *testing.T
	cli   agentCLI
	steps []func() providertest.Reply

	mu      sync.Mutex
	results []string
	turns   int
}

func (s *conversation) reply(r providertest.Request) providertest.Reply {
	if s.cli.aside != nil {
		if reply, ok := s.cli.aside(r); ok {
			return reply
		}
	}
	if r.JSON["tools"] == nil {
		s.t.Errorf("a request that is not the agent's turn: %s %s %.300s", r.Method, r.Path, r.Body)
		return providertest.Reply{Status: 400}
	}
	results := s.cli.results(r)
	s.mu.Lock()
	s.results, s.turns = results, s.turns+1
	s.mu.Unlock()
	if n := len(results); n < len(s.steps) {
		return s.steps[n]()
	}
	return providertest.Reply{Text: "Done.", Usage: turnUsage}
}

// seen returns the tool results of the last turn and the number of turns.
func (s *conversation) seen() (results []string, turns int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.results...), s.turns
}

// calls makes a step that calls c.
func calls(c tools.Call) func() providertest.Reply {
	return func() providertest.Reply {
		return providertest.Reply{Text: "Working.", Calls: []tools.Call{c}, Usage: turnUsage}
	}
}

// realAssignment is an assignment with an ID of its own, so that the processes found by it
// are this test's, whatever else runs on the machine.
func realAssignment(t *testing.T, task string) runtime.Assignment {
	a := assignment(t, task)
	a.ID = fmt.Sprintf("real-%d-%d", os.Getpid(), time.Now().UnixNano())
	return a
}

// publish runs a with the CLI through steps, against its fake API, and requires that the run
// ended without error; it returns the outcome, the tool results of the last turn, the number
// of turns, the events and the fake.
func (c agentCLI) publish(t *testing.T, a runtime.Assignment, steps ...func() providertest.Reply) (runtime.Outcome, []string, int, *recorder, *providertest.Server) {
	t.Helper()
	s := &conversation{t: t, cli: c, steps: steps}
	o, rec, fake, err := c.run(t, a, true, s.reply)
	results, turns := s.seen()
	require.NoError(t, err, "outcome %+v\nresults %q\noutput:\n%s", o, results, outputs(rec))
	return o, results, turns, rec, fake
}

// run runs a with the CLI against its fake API answering with fn, with its key or none; it
// returns the outcome, the events, the fake and the error.
func (c agentCLI) run(t *testing.T, a runtime.Assignment, withKey bool, fn func(providertest.Request) providertest.Reply) (runtime.Outcome, *recorder, *providertest.Server, error) {
	fake, url := c.serve(t, fn)
	rec := &recorder{t: t}
	rt := autonomous.New(c.command, append(realOptions, autonomous.WithEnv(c.env(t, url, withKey)))...)
	o, err := realRun(context.Background(), rt, a, rec)
	return o, rec, fake, err
}

// realRun runs a with a deadline.
func realRun(ctx context.Context, rt runtime.Runtime, a runtime.Assignment, rec *recorder) (runtime.Outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	return rt.Run(ctx, a, rec.sink)
}

// outputs returns the agent's output lines, for failure messages.
func outputs(rec *recorder) string {
	var lines []string
	for _, e := range rec.of(runtime.Output) {
		lines = append(lines, e.Text)
	}
	return strings.Join(lines, "\n")
}

// running reports whether a process of assignment a runs a command line holding cmd.
func running(a runtime.Assignment, cmd string) bool {
	for _, pid := range runs(a) {
		line, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		if strings.Contains(strings.ReplaceAll(string(line), "\x00", " "), cmd) {
			return true
		}
	}
	return false
}

// TestRealCLIPublishes runs each CLI through its template: it reads _task.md with its shell,
// writes a report with its file tool and finishes with _result.md; the report is published.
func TestRealCLIPublishes(t *testing.T) {
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.cli(t)
			a := realAssignment(t, "Count the widgets and write report.md.")
			scratch, err := filepath.Abs(a.Dir.Scratch())
			require.NoError(t, err)
			o, results, turns, rec, fake := cli.publish(t, a,
				calls(cli.shell("head -n 3 "+autonomous.TaskFile)),
				calls(cli.write(filepath.Join(scratch, "report.md"), "# Widgets\n\nThere are 3 widgets.\n")),
				calls(cli.shell("printf 'Counted 3 widgets: report.md.\\n' > _result.md.tmp && mv _result.md.tmp _result.md")))

			assert.Equal(t, runtime.Published, o.Status)
			assert.Equal(t, "Counted 3 widgets: report.md.", o.Summary)
			assert.Equal(t, []string{"report.md"}, o.Published)
			assert.Equal(t, "# Widgets\n\nThere are 3 widgets.\n", readFile(t, filepath.Join(a.Dir.Published(), "report.md")))
			assert.Len(t, rec.of(runtime.Started), 1)
			require.GreaterOrEqual(t, len(results), 2, "tool results %q", results)
			assert.Contains(t, results[0], "Count the widgets and write report.md.", "the shell ran in the scratch directory, where _task.md is")

			var turnRequests []providertest.Request
			for _, r := range fake.Requests() {
				if r.JSON["tools"] != nil {
					turnRequests = append(turnRequests, r)
					cli.wire(t, r)
				}
			}
			require.Len(t, turnRequests, turns)
			assert.Contains(t, string(turnRequests[0].Body), autonomous.Prompt[:40], "the first turn carries the template's prompt")
			if cli.usage != nil {
				cli.usage(t, rec, turns)
			}
		})
	}
}

// TestRealCLIOutbox has each CLI send a message through _outbox.md, wait for the answer in
// _inbox.md, and publish it.
func TestRealCLIOutbox(t *testing.T) {
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.cli(t)
			a := realAssignment(t, "Ask the coordinator for the answer and publish it.")
			mb := &mailbox{reply: "The answer is 42."}
			a.Mailbox = mb
			// No $(...): Gemini CLI refuses commands with command substitution.
			wait := `timeout 30 sh -c 'until grep -q "^\[Message from coordinator\]" _inbox.md; do sleep 0.1; done'; ` +
				`sed -n 's/^\[Message from coordinator\]: //p' _inbox.md > answer.md; cat answer.md`
			o, results, _, rec, _ := cli.publish(t, a,
				calls(cli.shell(`printf 'TO: coordinator\nWhat is the answer?\n---\n' >> _outbox.md`)),
				calls(cli.shell(wait)),
				calls(cli.shell("printf 'Published the answer.\\n' > _result.md.tmp && mv _result.md.tmp _result.md")))

			assert.Equal(t, runtime.Published, o.Status)
			assert.Equal(t, "Published the answer.", o.Summary)
			sent := mb.sentMessages()
			require.Len(t, sent, 1)
			assert.Equal(t, "coordinator", sent[0].To)
			assert.Equal(t, "What is the answer?", sent[0].Body)
			assert.Len(t, rec.of(runtime.MessageSent), 1)
			assert.Len(t, rec.of(runtime.MessageReceived), 1)
			assert.Equal(t, "The answer is 42.\n", readFile(t, filepath.Join(a.Dir.Published(), "answer.md")))
			require.GreaterOrEqual(t, len(results), 2, "tool results %q", results)
			assert.Contains(t, results[1], "The answer is 42.", "the agent read the reply in _inbox.md")
		})
	}
}

// TestRealCLICancelKillsBackground cancels a run while a command the agent started in the
// background runs: no process of the run is left.
func TestRealCLICancelKillsBackground(t *testing.T) {
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.cli(t)
			a := realAssignment(t, "Start the server in the background.")
			hold := make(chan struct{})
			s := &conversation{t: t, cli: cli, steps: []func() providertest.Reply{
				calls(cli.background("sleep 611")),
				func() providertest.Reply { <-hold; return providertest.Reply{Text: "Done."} },
			}}
			_, url := cli.serve(t, s.reply)
			t.Cleanup(func() { close(hold) }) // before the fake closes, which waits for its handlers
			rec := &recorder{t: t}
			rt := autonomous.New(cli.command, append(realOptions, autonomous.WithEnv(cli.env(t, url, true)))...)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type result struct {
				o   runtime.Outcome
				err error
			}
			done := make(chan result, 1)
			go func() {
				o, err := realRun(ctx, rt, a, rec)
				done <- result{o, err}
			}()
			// The background command runs, and carries the run's mark.
			deadline := time.Now().Add(2 * time.Minute)
			for !running(a, "sleep 611") {
				select {
				case r := <-done:
					results, _ := s.seen()
					t.Fatalf("the run ended before the background command ran: %+v, %v\nresults %q\noutput:\n%s", r.o, r.err, results, outputs(rec))
				case <-time.After(50 * time.Millisecond):
				}
				require.True(t, time.Now().Before(deadline), "the background command never ran; output:\n%s", outputs(rec))
			}
			cancel()
			r := <-done
			assert.Equal(t, runtime.Cancelled, r.o.Status)
			assert.ErrorIs(t, r.err, context.Canceled)
			assertGone(t, a)
		})
	}
}

// TestRealCLIMissingKey runs each CLI without its key: the run fails at once, saying so, and
// the API hears nothing.
func TestRealCLIMissingKey(t *testing.T) {
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.cli(t)
			a := realAssignment(t, "Anything.")
			start := time.Now()
			o, _, fake, err := cli.run(t, a, false, func(providertest.Request) providertest.Reply { return providertest.Reply{Text: "Done."} })
			require.Error(t, err)
			assert.Less(t, time.Since(start), 30*time.Second, "a missing key fails fast")
			assert.Equal(t, runtime.Failed, o.Status)
			assert.ErrorIs(t, err, runtime.ErrNoResult)
			assert.Contains(t, err.Error(), cli.keyVar, "the error names the missing key")
			assert.Empty(t, fake.Requests())
			assertGone(t, a)
		})
	}
}

// unreachable returns a runtime of the CLI pointed at an address where nothing listens.
func (c agentCLI) unreachable(t *testing.T) *autonomous.Runtime {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + l.Addr().String() + c.basePath
	require.NoError(t, l.Close())
	return autonomous.New(c.command, append(realOptions, autonomous.WithEnv(c.env(t, url, true)))...)
}

// TestRealCLIUnreachableStalls points each CLI at an address where nothing listens: the CLI
// retries, printing a line each time, which is no progress, and the watchdog reports the run
// stalled within its window.
func TestRealCLIUnreachableStalls(t *testing.T) {
	t.Parallel() // it waits on the CLI's retries
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := realAssignment(t, "Anything.")
			rec := &recorder{t: t}
			const window = 10 * time.Second
			rt := runtime.Watch(c.cli(t).unreachable(t), window)
			start := time.Now()
			o, err := realRun(context.Background(), rt, a, rec)
			elapsed := time.Since(start)
			require.Error(t, err, "outcome %+v\noutput:\n%s", o, outputs(rec))
			assert.Equal(t, runtime.Stalled, o.Status, "%v\noutput:\n%s", err, outputs(rec))
			assert.True(t, errors.Is(err, runtime.ErrStalled), "%v", err)
			// The watchdog looks every window/4; stopping the CLI takes its grace.
			assert.Less(t, elapsed, window+window/4+5*time.Second, "stalled within the window")
			assert.Contains(t, err.Error(), "latest event: output: ", "the CLI printed its retries, which are no progress")
			assertGone(t, a)
		})
	}
}

// TestRealCLIUnreachableDeadline points each CLI at an address where nothing listens, with a
// deadline and no watchdog: the CLI retries until the deadline, and the run's error says why,
// with the CLI's own last error.
func TestRealCLIUnreachableDeadline(t *testing.T) {
	t.Parallel() // it waits on the CLI's retries
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cli := c.cli(t)
			a := realAssignment(t, "Anything.")
			rec := &recorder{t: t}
			rt := cli.unreachable(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			o, err := realRun(ctx, rt, a, rec)
			require.ErrorIs(t, err, context.DeadlineExceeded, "output:\n%s", outputs(rec))
			t.Log(err)
			assert.Equal(t, runtime.TimedOut, o.Status)
			assert.Contains(t, err.Error(), "autonomous: agent stopped: context deadline exceeded; the agent's last error")
			assert.Contains(t, err.Error(), cli.unreachableError, "output:\n%s", outputs(rec))
			assert.Equal(t, err.Error(), o.Summary)
			assertGone(t, a)
		})
	}
}

// TestRealCLISandbox has each CLI's shell write in its scratch folder, try to write beside it
// and in this package's folder, and print a secret of the server's environment: only the
// scratch write lands, the secret is not there, and the CLI reaches its model with its key.
func TestRealCLISandbox(t *testing.T) {
	t.Setenv("AGIRAPH_TEST_SERVER_TOKEN", "s3cret")
	wd, err := os.Getwd()
	require.NoError(t, err)
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.cli(t)
			a := realAssignment(t, "Try the walls.")
			walls := []string{filepath.Join(string(a.Dir), "outside.txt"), filepath.Join(wd, "evil-"+c.name+".txt")}
			t.Cleanup(func() { os.Remove(walls[1]) })
			// No $(...) nor ||: Gemini CLI refuses command substitution, and the test reads
			// what each write said.
			command := "echo in > inside.txt; echo wrote inside"
			for _, w := range walls {
				command += fmt.Sprintf("; echo x > %s 2>/dev/null && echo wrote %s; test -e %s || echo refused %s", w, w, w, w)
			}
			command += "; echo secret=[$AGIRAPH_TEST_SERVER_TOKEN]"
			o, results, _, rec, _ := cli.publish(t, a,
				calls(cli.shell(command)),
				calls(cli.shell("printf 'Tried.\\n' > _result.md.tmp && mv _result.md.tmp _result.md")))
			require.NotEmpty(t, results)
			assert.Contains(t, results[0], "wrote inside", "the command ran")
			assert.Contains(t, results[0], "secret=[]", "a secret of the server's environment reached the agent")
			assert.Equal(t, []string{"inside.txt"}, o.Published)
			started := rec.of(runtime.Started)
			require.Len(t, started, 1)
			assert.Contains(t, started[0].Text, "sandbox: writes only ")
			if strings.Contains(started[0].Text, "containment is weaker") {
				t.Log("no bubblewrap here: only the environment is sandboxed")
				return
			}
			for _, w := range walls {
				assert.NoFileExists(t, w)
				if !strings.HasPrefix(w, "/tmp/") { // elsewhere under /tmp it writes in a /tmp of its own
					assert.Contains(t, results[0], "refused "+w)
				}
			}
		})
	}
}

// TestRealCLIWorkToolsOverMCP has each CLI, through its template, reach the run through the
// squad's work tools over MCP alone (no _outbox.md, no _result.md): it sends the coordinator a
// message, asks for a sub-node, suggests follow-up work, writes a file and publishes. The
// message goes through the mailbox, the sub-node and the suggestion are in the outcome, and the
// file is published. Without the MCP server none of these tools exists and the run fails.
func TestRealCLIWorkToolsOverMCP(t *testing.T) {
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.cli(t)
			a := realAssignment(t, "Split the survey.")
			mb := &mailbox{}
			a.Mailbox = mb
			scratch, err := filepath.Abs(a.Dir.Scratch())
			require.NoError(t, err)
			o, results, _, rec, fake := cli.publish(t, a,
				calls(cli.work("send_message", map[string]any{"to": "coordinator", "content": "Starting the survey."})),
				calls(cli.work("create_work_node", map[string]any{"task": "Survey the northern region."})),
				calls(cli.work("suggest_next", map[string]any{"suggestion": "Compare with last year."})),
				calls(cli.write(filepath.Join(scratch, "survey.md"), "# Survey\n\nThe south is done.\n")),
				calls(cli.work("publish", map[string]any{"summary": "survey.md; the north is a sub-node"})))

			assert.Equal(t, runtime.Published, o.Status, "results %q\noutput:\n%s", results, outputs(rec))
			assert.Equal(t, "survey.md; the north is a sub-node", o.Summary)
			assert.Equal(t, []string{"survey.md"}, o.Published)
			assert.Equal(t, "# Survey\n\nThe south is done.\n", readFile(t, filepath.Join(a.Dir.Published(), "survey.md")))
			require.Len(t, o.SubNodes, 1)
			assert.Equal(t, "Survey the northern region.", o.SubNodes[0].Task)
			assert.Equal(t, []string{"Compare with last year."}, o.Suggestions)
			sent := mb.sentMessages()
			require.Len(t, sent, 1)
			assert.Equal(t, "coordinator", sent[0].To)
			assert.Equal(t, "Starting the survey.", sent[0].Body)
			assert.Len(t, rec.of(runtime.MessageSent), 1)
			require.GreaterOrEqual(t, len(results), 4, "tool results %q", results)
			assert.Contains(t, results[0], "Sent to coordinator.", "the CLI called send_message over MCP")
			assert.Contains(t, results[1], "Sub-task 1 requested", "the CLI called create_work_node over MCP")
			started := rec.of(runtime.Started)
			require.Len(t, started, 1)
			assert.Contains(t, started[0].Text, "the work tools over MCP at http://127.0.0.1:")
			for _, r := range fake.Requests() {
				assert.NotContains(t, string(r.Body), "AGIRAPH_MCP_TOKEN=", "the token stays out of the model's view")
			}
			assertNoToken(t, a)
		})
	}
}

// TestRealCLIAsksOverMCP has each CLI ask the human through ask_human over MCP: the run ends
// Waiting with the question; run again with the answer (in _task.md), the agent reads it and
// publishes it through the tools.
func TestRealCLIAsksOverMCP(t *testing.T) {
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.cli(t)
			a := realAssignment(t, "Pick a colour.")
			o, results, _, rec, _ := cli.publish(t, a,
				calls(cli.work("ask_human", map[string]any{"question": "Which colour?"})))
			assert.Equal(t, runtime.Waiting, o.Status, "results %q\noutput:\n%s", results, outputs(rec))
			assert.Equal(t, "Which colour?", o.Question)
			assert.Empty(t, o.Published)

			a.Answer = "Teal."
			o, results, _, rec, _ = cli.publish(t, a,
				calls(cli.shell("sed -n '/answer to your question/,$p' "+autonomous.TaskFile+" > colour.md; cat colour.md")),
				calls(cli.work("publish", map[string]any{"summary": "colour.md"})))
			assert.Equal(t, runtime.Published, o.Status, "results %q\noutput:\n%s", results, outputs(rec))
			assert.Equal(t, []string{"colour.md"}, o.Published)
			assert.Contains(t, readFile(t, filepath.Join(a.Dir.Published(), "colour.md")), "Teal.")
		})
	}
}

// TestRealCLIWithoutMCP runs each CLI with its template less the MCP server: the work tools are
// not offered, a call of publish fails, and the run ends without a result.
func TestRealCLIWithoutMCP(t *testing.T) {
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.cli(t)
			cli.command = withoutMCP(cli.command)
			a := realAssignment(t, "Publish nothing.")
			s := &conversation{t: t, cli: cli, steps: []func() providertest.Reply{
				calls(cli.work("publish", map[string]any{"summary": "nothing"})),
			}}
			o, rec, fake, err := cli.run(t, a, true, s.reply)
			require.ErrorIs(t, err, runtime.ErrNoResult, "outcome %+v", o)
			assert.Equal(t, runtime.Failed, o.Status)
			requests := fake.Requests()
			require.NotEmpty(t, requests)
			for _, r := range requests {
				offered, _ := json.Marshal(r.JSON["tools"])
				assert.NotContains(t, string(offered), "agiraph", "no work tools without the MCP server")
			}
			assert.NotContains(t, rec.of(runtime.Started)[0].Text, "over MCP")
		})
	}
}

// withoutMCP returns a template without the arguments that give the CLI the MCP server.
func withoutMCP(command []string) []string {
	var out []string
	for i := 0; i < len(command); i++ {
		switch {
		case command[i] == "-c" && i+1 < len(command) && strings.HasPrefix(command[i+1], "mcp_servers."):
			i++
		case strings.Contains(command[i], "{{.MCP"):
		default:
			out = append(out, command[i])
		}
	}
	return out
}

// assertNoToken fails if a file of a's node folder holds the token of the MCP server.
func assertNoToken(t *testing.T, a runtime.Assignment) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(string(a.Dir), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err == nil {
			assert.NotContains(t, string(data), autonomous.MCPTokenEnv+"=", "%s", path)
		}
		return nil
	}))
}
