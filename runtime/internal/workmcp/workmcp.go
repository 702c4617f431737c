// Package workmcp offers an assignment's work tools to a CLI agent over MCP, for the adapters
// that run one (runtime/claudecode, runtime/autonomous): the tools of adapter.WorkTools,
// ask_human and the assignment's own tools on an endpoint of the assignment (tools/mcp.Serve: a loopback port behind a token
// of its own), and the outcome the agent reported through them.
package workmcp

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/mcp"
)

// Name is the name of the server in the CLI's MCP configuration; CLIs name its tools after it
// (Claude Code mcp__agiraph__publish, Gemini CLI mcp_agiraph_publish).
const Name = "agiraph"

// Prompt follows an agent's instructions when it has the work tools over MCP.
const Prompt = `

# Work tools

The MCP server "agiraph" gives you the tools of this run: publish (finish: publishes your scratch files), checkpoint (end this stage without publishing), send_message and check_messages (talk to the coordinator, other workers or the human), create_work_node (ask for a sub-task, for another worker), suggest_next (suggest follow-up work), and ask_human (ask the human; end your turn right after); its other tools, such as read_ref (an input of your node, by name) and the memory tools, are the team's. Prefer them to the files above; both work.
`

// Server is the endpoint of one assignment's work tools, with what the agent reported through
// them. Close it when the assignment ends.
type Server struct {
	*mcp.Endpoint
	report *adapter.Report
	close  sync.Once
	err    error
}

// Serve starts the endpoint of a's work tools, ask_human and a.Tools (a tool named as a work
// tool is refused); the events of the tools (messages sent and received) go to rep, whose sink
// must take events from several goroutines at once. Unless it is nil, called is told of each
// call the client gives the model's id of (see mcp.CallIDMeta) before the tool runs: an adapter
// that reports the model's calls from the CLI's output, which can show a call only after the
// CLI ran it, reports it there first, so that what the tool does comes after its call.
func Serve(a runtime.Assignment, rep *adapter.Emitter, called func(tools.Call)) (*Server, error) {
	report := adapter.NewReport(runtime.Outcome{})
	ts := append(adapter.WorkTools(a, report, rep), askHuman(report))
	ts = append(ts, a.Tools...)
	if called != nil {
		for i, t := range ts {
			ts[i].Handler = func(ctx context.Context, args json.RawMessage) (string, error) {
				if c, ok := tools.CallFrom(ctx); ok && c.ID != "" {
					called(tools.Call{ID: c.ID, Name: t.Name, Args: args})
				}
				return t.Handler(ctx, args)
			}
		}
	}
	ep, err := mcp.Serve(Name, ts)
	if err != nil {
		return nil, err
	}
	return &Server{Endpoint: ep, report: report}, nil
}

// Close stops the endpoint: no tool runs after it returns. It may be called more than once,
// and on a nil Server.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	s.close.Do(func() { s.err = s.Endpoint.Close() })
	return s.err
}

// Reported returns what the agent reported through the tools so far; the zero Outcome for a
// nil Server (no tools were served).
func (s *Server) Reported() runtime.Outcome {
	if s == nil {
		return runtime.Outcome{}
	}
	return s.report.Outcome()
}

// Ended reports whether the agent ended its assignment through the tools: published,
// checkpointed or asked the human.
func (s *Server) Ended() bool {
	_, ok := s.Complete(runtime.Outcome{})
	return ok
}

// Complete returns o with what the agent reported through the tools: its suggestions and
// sub-nodes; and, when the agent ended the assignment through them (ok true), that ending —
// status, files, result, question, and the summary it gave, if any. A nil Server reports nothing.
func (s *Server) Complete(o runtime.Outcome) (_ runtime.Outcome, ok bool) {
	r := s.Reported()
	o.Suggestions, o.SubNodes = r.Suggestions, r.SubNodes
	switch r.Status {
	case runtime.Published, runtime.Checkpointed, runtime.Waiting:
		o.Status, o.Published, o.Result, o.Question = r.Status, r.Published, r.Result, r.Question
		if r.Summary != "" {
			o.Summary = r.Summary
		}
		return o, true
	}
	return o, false
}

// askHuman is the ask_human tool of a CLI agent: the question ends the assignment, which runs
// again with the human's answer.
func askHuman(report *adapter.Report) tools.Tool {
	type args struct {
		Question string `json:"question" jsonschema_description:"The question, with what the human needs to answer it"`
	}
	return tools.Func("ask_human", "Ask the human a question. End your turn right after: the work goes on with their answer.",
		func(_ context.Context, a args) (string, error) {
			if err := report.Ask(a.Question); err != nil {
				return "", err
			}
			return "Your question is with the human. End your turn now; the work goes on with their answer.", nil
		})
}
