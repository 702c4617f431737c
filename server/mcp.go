package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/nodes"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server also speaks the Model Context Protocol at /mcp (streamable HTTP), so that a person's
// own MCP client (a desktop assistant, an IDE, another agent) can drive the agents: each tool is
// one operation of the HTTP API, run in-process behind the same guard (the token, the Host and
// Origin checks), and answers with the API's JSON, or with its error as a tool error.

// mcpPath is where the MCP endpoint is served.
const mcpPath = "/mcp"

// The inputs of the MCP tools. Field names follow the HTTP API's bodies.
type (
	mcpNone  struct{}
	mcpAgent struct {
		Agent string `json:"agent" jsonschema:"the agent's id"`
	}
	mcpCreate struct {
		Goal      string        `json:"goal" jsonschema:"what the agent should do"`
		ID        string        `json:"id,omitempty" jsonschema:"the agent's id (default: a new one)"`
		Model     string        `json:"model,omitempty" jsonschema:"the model, among the ones the server allows (default: the server's)"`
		Mode      string        `json:"mode,omitempty" jsonschema:"finite (finish the goal; the default) or infinite (keep going)"`
		Tools     []string      `json:"tools,omitempty" jsonschema:"the built-in tools its workers may use, by name (default: all)"`
		Budget    *nodes.Budget `json:"budget,omitempty" jsonschema:"what every run of the agent may spend (usd, tokens; soft: the fraction at which the coordinator is told)"`
		Approvals *hooks.Policy `json:"approvals,omitempty" jsonschema:"the tool calls held for the human's approval: tools and workers, by name pattern (send_*)"`
	}
	mcpRun struct {
		Agent string `json:"agent" jsonschema:"the agent's id"`
		Goal  string `json:"goal" jsonschema:"the goal of the new run"`
	}
	mcpSend struct {
		Agent   string `json:"agent" jsonschema:"the agent's id"`
		Message string `json:"message" jsonschema:"the message"`
		To      string `json:"to,omitempty" jsonschema:"a worker's id (default: the coordinator)"`
	}
	mcpAnswer struct {
		Agent    string      `json:"agent" jsonschema:"the agent's id"`
		Response string      `json:"response,omitempty" jsonschema:"the answer (or give a verdict, for a tool call waiting for approval)"`
		Worker   string      `json:"worker,omitempty" jsonschema:"who asked: a worker's id, or coordinator (default: the one waiting)"`
		Verdict  *mcpVerdict `json:"verdict,omitempty" jsonschema:"for a tool call waiting for approval (get_agent shows it), instead of a response"`
	}
	mcpVerdict struct {
		Approve bool           `json:"approve" jsonschema:"true runs the call; false rejects it"`
		Args    map[string]any `json:"args,omitempty" jsonschema:"arguments to run the call with instead of the model's (they must match the tool's schema)"`
		Reason  string         `json:"reason,omitempty" jsonschema:"why the call is rejected: the agent reads it"`
	}
	mcpResume struct {
		Agent string `json:"agent" jsonschema:"the agent's id"`
		Run   string `json:"run,omitempty" jsonschema:"the run to resume (default: the last)"`
	}
	mcpBudget struct {
		Agent  string  `json:"agent" jsonschema:"the agent's id"`
		Run    string  `json:"run,omitempty" jsonschema:"the run (default: the last)"`
		USD    float64 `json:"usd,omitempty" jsonschema:"the limit in US dollars (0: none)"`
		Tokens int     `json:"tokens,omitempty" jsonschema:"the limit in tokens (0: none)"`
		Soft   float64 `json:"soft,omitempty" jsonschema:"the fraction of a limit at which the coordinator is told (default 0.8)"`
	}
	mcpNode struct {
		Agent string `json:"agent" jsonschema:"the agent's id"`
		Node  string `json:"node" jsonschema:"the node's id, such as n1"`
	}
	mcpSkip struct {
		Agent string `json:"agent" jsonschema:"the agent's id"`
		Node  string `json:"node" jsonschema:"the node's id, such as n1"`
		Note  string `json:"note,omitempty" jsonschema:"why it is skipped, for the workers of the nodes after it"`
	}
	mcpSteps struct {
		Agent string `json:"agent" jsonschema:"the agent's id"`
		Run   string `json:"run" jsonschema:"the run's id"`
		Tick  int    `json:"tick,omitempty" jsonschema:"one tick: its state, board and diff to the tick before (default: the list of ticks)"`
	}
	mcpFork struct {
		Agent            string `json:"agent" jsonschema:"the agent's id"`
		Run              string `json:"run" jsonschema:"the run to fork"`
		Tick             int    `json:"tick" jsonschema:"the tick to fork from (see get_steps)"`
		Answer           string `json:"answer,omitempty" jsonschema:"another answer to the coordinator's question pending at the tick"`
		CoordinatorModel string `json:"coordinator_model,omitempty" jsonschema:"another model for the coordinator"`
		WorkerModel      string `json:"worker_model,omitempty" jsonschema:"another model for the workers (or the one worker names)"`
		Worker           string `json:"worker,omitempty" jsonschema:"the worker worker_model is for (default: every worker)"`
		NewAgent         string `json:"new_agent,omitempty" jsonschema:"the id of a new agent to fork into, with the memory, event log and conversation as they were at the tick (default: fork in the agent itself)"`
	}
	mcpFile struct {
		Agent string `json:"agent" jsonschema:"the agent's id"`
		Path  string `json:"path" jsonschema:"a path in the run's folder, such as nodes/n1/published/report.md; empty for the folder itself"`
	}
	mcpPage struct {
		Agent string `json:"agent" jsonschema:"the agent's id"`
		After int64  `json:"after,omitempty" jsonschema:"only what comes after this sequence number"`
		Limit int64  `json:"limit,omitempty" jsonschema:"at most this many (default: the API's)"`
	}
)

// mcpHandler is the MCP endpoint: a server whose tools are the API's operations.
func (s *Server) mcpHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "agiraph", Title: "Agiraph agents", Version: "1"}, nil)
	agent := func(id string) string { return "/agents/" + url.PathEscape(id) }
	mcpTool(s, srv, "list_agents", "List the agents and their status.",
		func(mcpNone) (string, string, any) { return http.MethodGet, "/agents", nil })
	mcpTool(s, srv, "create_agent", "Create an agent with a goal; it starts working on it at once.",
		func(in mcpCreate) (string, string, any) {
			body := map[string]any{}
			for k, v := range omitEmpty(map[string]string{"goal": in.Goal, "id": in.ID, "model": in.Model, "mode": in.Mode}) {
				body[k] = v
			}
			if len(in.Tools) > 0 {
				body["tools"] = in.Tools
			}
			if in.Budget != nil {
				body["budget"] = in.Budget
			}
			if in.Approvals != nil {
				body["approvals"] = in.Approvals
			}
			return http.MethodPost, "/agents", body
		})
	mcpTool(s, srv, "get_agent", "An agent's status: working, waiting_for_human (with the question and who asks), completed (with the output), failed (with the error)...",
		func(in mcpAgent) (string, string, any) { return http.MethodGet, agent(in.Agent), nil })
	mcpTool(s, srv, "start_run", "Start another run of an agent, with a new goal.",
		func(in mcpRun) (string, string, any) {
			return http.MethodPost, agent(in.Agent) + "/runs", map[string]string{"goal": in.Goal}
		})
	mcpTool(s, srv, "send_message", "Send a message to an agent's coordinator, or to one of its workers.",
		func(in mcpSend) (string, string, any) {
			return http.MethodPost, agent(in.Agent) + "/send", omitEmpty(map[string]string{"message": in.Message, "to": in.To})
		})
	mcpTool(s, srv, "answer_question", "Answer the question an agent's coordinator or worker asked, or approve, edit or reject the tool call it waits to have approved.",
		func(in mcpAnswer) (string, string, any) {
			body := map[string]any{}
			for k, v := range omitEmpty(map[string]string{"response": in.Response, "worker": in.Worker}) {
				body[k] = v
			}
			if in.Verdict != nil {
				body["verdict"] = in.Verdict
			}
			return http.MethodPost, agent(in.Agent) + "/respond", body
		})
	mcpTool(s, srv, "stop_agent", "Stop an agent's workers; the run stays in progress.",
		func(in mcpAgent) (string, string, any) { return http.MethodPost, agent(in.Agent) + "/stop", nil })
	mcpTool(s, srv, "pause_agent", "Pause an agent's run in progress; resume_agent continues it.",
		func(in mcpAgent) (string, string, any) { return http.MethodPost, agent(in.Agent) + "/pause", nil })
	mcpTool(s, srv, "resume_agent", "Resume an agent's run that was paused, interrupted or failed.",
		func(in mcpResume) (string, string, any) {
			return http.MethodPost, agent(in.Agent) + "/resume", omitEmpty(map[string]string{"run": in.Run})
		})
	mcpTool(s, srv, "set_budget", "Set the budget of an agent's run in dollars and tokens; a run paused over its budget (over_budget) goes on with resume_agent once it is raised.",
		func(in mcpBudget) (string, string, any) {
			return http.MethodPost, agent(in.Agent) + "/budget", map[string]any{"run": in.Run, "usd": in.USD, "tokens": in.Tokens, "soft": in.Soft}
		})
	mcpTool(s, srv, "get_board", "An agent's work board: its nodes (task, status, worker, what they published) and workers.",
		func(in mcpAgent) (string, string, any) { return http.MethodGet, agent(in.Agent) + "/board", nil })
	mcpTool(s, srv, "get_node", "One node of an agent's board, with its spec and published files.",
		func(in mcpNode) (string, string, any) {
			return http.MethodGet, agent(in.Agent) + "/board/" + url.PathEscape(in.Node), nil
		})
	mcpTool(s, srv, "retry_node", "Put a failed node of an agent's run back on the board for a new attempt.",
		func(in mcpNode) (string, string, any) {
			return http.MethodPost, agent(in.Agent) + "/board/" + url.PathEscape(in.Node) + "/retry", nil
		})
	mcpTool(s, srv, "skip_node", "Skip a pending or failed node of an agent's run: the nodes after it go on without it.",
		func(in mcpSkip) (string, string, any) {
			return http.MethodPost, agent(in.Agent) + "/board/" + url.PathEscape(in.Node) + "/skip", omitEmpty(map[string]string{"note": in.Note})
		})
	mcpTool(s, srv, "read_file", "Read a file of an agent's run folder, or list a folder.",
		func(in mcpFile) (string, string, any) {
			p := agent(in.Agent) + "/workspace"
			if in.Path != "" {
				parts := strings.Split(strings.Trim(in.Path, "/"), "/")
				for i := range parts {
					parts[i] = url.PathEscape(parts[i])
				}
				p += "/" + strings.Join(parts, "/")
			}
			return http.MethodGet, p, nil
		})
	mcpTool(s, srv, "get_conversation", "The conversation between the human and an agent's coordinator.",
		func(in mcpPage) (string, string, any) {
			return http.MethodGet, agent(in.Agent) + "/conversation" + page(in), nil
		})
	mcpTool(s, srv, "get_events", "What happened in an agent, as logged events.",
		func(in mcpPage) (string, string, any) {
			return http.MethodGet, agent(in.Agent) + "/events" + page(in), nil
		})
	mcpTool(s, srv, "get_steps", "A run's steps, one a tick: the state as each tick ended; with tick, that tick's state, board and diff to the tick before.",
		func(in mcpSteps) (string, string, any) {
			p := agent(in.Agent) + "/runs/" + url.PathEscape(in.Run) + "/steps"
			if in.Tick != 0 {
				p += "/" + fmt.Sprint(in.Tick)
			}
			return http.MethodGet, p, nil
		})
	mcpTool(s, srv, "fork_run", "Start a new run from a tick of a run, keeping what it had then, with another answer or model; with new_agent, in a new agent.",
		func(in mcpFork) (string, string, any) {
			body := map[string]any{"tick": in.Tick}
			for k, v := range omitEmpty(map[string]string{"answer": in.Answer, "coordinator_model": in.CoordinatorModel, "worker_model": in.WorkerModel, "worker": in.Worker, "agent": in.NewAgent}) {
				body[k] = v
			}
			return http.MethodPost, agent(in.Agent) + "/runs/" + url.PathEscape(in.Run) + "/fork", body
		})
	// The guard checks the Host (against more names than loopback ones) and the Origin before
	// this handler; the SDK's own loopback check would refuse the names the operator allowed.
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})
}

// mcpTool adds an MCP tool that runs the API request that request makes of its input.
func mcpTool[In any](s *Server, srv *mcp.Server, name, description string, request func(In) (method, path string, body any)) {
	mcp.AddTool(srv, &mcp.Tool{Name: name, Description: description},
		func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
			method, path, body := request(in)
			status, out := s.call(ctx, method, path, body)
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}}
			res.IsError = status >= http.StatusBadRequest
			return res, nil, nil
		})
}

// call serves one request of the API in-process, past the guard (the MCP request that asks for
// it passed it), and returns the status and the answer.
func (s *Server) call(ctx context.Context, method, path string, body any) (int, string) {
	var r io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return http.StatusBadRequest, fmt.Sprintf(`{"error": %q}`, err.Error())
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, r)
	if err != nil {
		return http.StatusBadRequest, fmt.Sprintf(`{"error": %q}`, err.Error())
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	s.serveMux(rec, req)
	if rec.status >= 300 && rec.status < 400 { // the mux cleans paths with a redirect: ".." and such
		b, _ := json.Marshal(map[string]string{"error": fmt.Sprintf("%s is not a clean path (it leads to %s)", shown(path), shown(rec.header.Get("Location")))})
		return http.StatusBadRequest, string(b)
	}
	return rec.status, strings.TrimSpace(rec.body.String())
}

// recorder is the answer of an in-process request.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(status int)      { r.status = status }

// omitEmpty drops the empty fields of a body, so that defaults apply.
func omitEmpty(m map[string]string) map[string]string {
	for k, v := range m {
		if v == "" {
			delete(m, k)
		}
	}
	return m
}

// page is the query of a paged read: the values given, which the API checks.
func page(in mcpPage) string {
	q := url.Values{}
	if in.After != 0 {
		q.Set("after", fmt.Sprint(in.After))
	}
	if in.Limit != 0 {
		q.Set("limit", fmt.Sprint(in.Limit))
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}
