package autonomous

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
)

// ErrTemplate is wrapped by the error a Runtime built from a bad command template reports (see
// [Runtime.Err]).
var ErrTemplate = errors.New("autonomous: bad command template")

// Vars are the values a command template can use, as {{.Name}}.
type Vars struct {
	// Task is the node's task as the assignment gives it (Assignment.Task), without the
	// protocol. Prefer Prompt or TaskFile: an agent that sees only Task does not know how to
	// finish or talk to the others.
	Task string
	// Prompt is a short instruction telling the agent to read TaskFile and follow it; it fits
	// in one argument whatever the size of the task.
	Prompt string
	// TaskFile is the absolute path of _task.md: the task, the worker's instructions and the
	// file protocol.
	TaskFile string
	// ContextFile is the absolute path of _context.json.
	ContextFile string
	// Dir is the node's folder, Scratch its scratch directory (the agent's working directory)
	// and Published its published directory.
	Dir, Scratch, Published string
	// ID, Run, Node and Worker identify the assignment, the run, the node and the worker.
	ID, Run, Node, Worker string
	// MCPURL is the URL of the assignment's MCP server (streamable HTTP), which offers the
	// squad's work tools: publish, checkpoint, send_message, check_messages, create_work_node,
	// suggest_next and ask_human. A client sends "Authorization: Bearer <token>", the token
	// being in the agent's environment variable MCPTokenEnv and nowhere else.
	MCPURL string
	// MCPConfig is the path of a file naming that server for MCP clients, outside the node's
	// folder (under the user's cache folder) and removed when the run ends: {"mcpServers": {"agiraph": {"type": "http",
	// "url": ..., "headers": {"Authorization": "Bearer ${AGIRAPH_MCP_TOKEN}"}}}} — the shape
	// of Gemini CLI's settings, which resolve the variable; the file holds no token.
	MCPConfig string
}

// placeholders lists the names Vars offers, sorted.
var placeholders = []string{"ContextFile", "Dir", "ID", "MCPConfig", "MCPURL", "Node", "Prompt", "Published", "Run", "Scratch", "Task", "TaskFile", "Worker"}

// mcpPlaceholders are the placeholders that give the agent the MCP server: a template that
// uses one gets it.
var mcpPlaceholders = []string{"MCPConfig", "MCPURL"}

// envArg matches an argument that sets an environment variable (NAME=value).
var envArg = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// command is a parsed command template: one text/template per argument, the leading
// NAME=value arguments setting the agent's environment.
type command struct {
	env, args []*template.Template
	// mcp says whether the template uses the MCP server.
	mcp bool
}

// parseCommand parses each argument of argv as a text/template over Vars and checks that it
// only names fields of Vars; an unknown placeholder is an error naming it and the known ones.
func parseCommand(argv []string) (*command, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: the command is empty", ErrTemplate)
	}
	c := &command{}
	var unknown []string
	for i, arg := range argv {
		t, err := template.New(fmt.Sprintf("argument %d", i)).Option("missingkey=error").Parse(arg)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrTemplate, err)
		}
		for _, tree := range t.Templates() {
			if tree.Tree != nil {
				walk(tree.Tree.Root, func(name string) {
					c.mcp = c.mcp || slices.Contains(mcpPlaceholders, name)
					if !slices.Contains(placeholders, name) && !slices.Contains(unknown, name) {
						unknown = append(unknown, name)
					}
				})
			}
		}
		if len(c.args) == 0 && envArg.MatchString(arg) {
			c.env = append(c.env, t)
		} else {
			c.args = append(c.args, t)
		}
	}
	if len(c.args) == 0 {
		return nil, fmt.Errorf("%w: no program after the variables", ErrTemplate)
	}
	if len(unknown) > 0 {
		for i, u := range unknown {
			unknown[i] = "{{." + u + "}}"
		}
		return nil, fmt.Errorf("%w: unknown placeholder %s; known: {{.%s}}", ErrTemplate,
			strings.Join(unknown, ", "), strings.Join(placeholders, "}}, {{."))
	}
	// Whatever the walk did not catch (a field of a field, a call of a string) fails here.
	if _, _, err := c.render(Vars{}); err != nil {
		return nil, err
	}
	return c, nil
}

// render executes the templates with v: the agent's environment entries and its command line.
func (c *command) render(v Vars) (env, argv []string, err error) {
	if env, err = execute(c.env, v); err != nil {
		return nil, nil, err
	}
	argv, err = execute(c.args, v)
	return env, argv, err
}

// execute executes ts with v.
func execute(ts []*template.Template, v Vars) ([]string, error) {
	out := make([]string, len(ts))
	for i, t := range ts {
		var b strings.Builder
		if err := t.Execute(&b, v); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrTemplate, err)
		}
		out[i] = b.String()
	}
	return out, nil
}

// walk calls f with the first field name of every field reference under n ({{.Name}},
// {{$.Name}}).
func walk(n parse.Node, f func(string)) {
	switch n := n.(type) {
	case nil:
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			walk(c, f)
		}
	case *parse.ActionNode:
		walk(n.Pipe, f)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			walk(c, f)
		}
	case *parse.CommandNode:
		for _, c := range n.Args {
			walk(c, f)
		}
	case *parse.FieldNode:
		f(n.Ident[0])
	case *parse.VariableNode:
		if len(n.Ident) > 1 && n.Ident[0] == "$" {
			f(n.Ident[1])
		}
	case *parse.ChainNode:
		walk(n.Node, f)
	case *parse.IfNode:
		walk(n.Pipe, f)
		walk(n.List, f)
		walk(n.ElseList, f)
	case *parse.RangeNode:
		walk(n.Pipe, f)
		walk(n.List, f)
		walk(n.ElseList, f)
	case *parse.WithNode:
		walk(n.Pipe, f)
		walk(n.List, f)
		walk(n.ElseList, f)
	case *parse.TemplateNode:
		walk(n.Pipe, f)
	}
}
