package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// DefaultMaxOutput is the default cap on a result's content, in bytes.
const DefaultMaxOutput = 32 << 10

// ErrInvalidTool is wrapped by the errors [NewRegistry] and [Registry.Add] return for a tool
// that cannot be registered.
var ErrInvalidTool = errors.New("invalid tool")

// Call is one tool call a model made.
type Call struct {
	// ID is the provider's id for the call, echoed in the result.
	ID string
	// Name is the tool called.
	Name string
	// Args are the arguments as JSON; empty means no arguments ({}).
	Args json.RawMessage
}

// Result is the outcome of one call, to send back to the model. Its JSON leaves out the flags
// that are false.
type Result struct {
	// CallID and Name repeat the call's ID and Name.
	CallID string
	Name   string
	// Content is the handler's output, or the error message when IsError is set.
	Content string
	// IsError says the call failed: unknown tool, invalid arguments, handler error or panic,
	// or a call not run because the context ended.
	IsError bool `json:",omitempty"`
	// Truncated says Content was cut to the registry's output cap.
	Truncated bool `json:",omitempty"`
	// Attachment is the file the call showed the model besides Content, if any (see Attach).
	Attachment *Attachment `json:",omitempty"`
}

// RegistryOption configures a [Registry].
type RegistryOption func(*Registry)

// WithMaxOutput caps a result's content at n bytes (default [DefaultMaxOutput]); longer content
// is cut on a UTF-8 boundary and a note saying how much was cut is appended (the note is not
// counted in n). n <= 0 means no cap.
func WithMaxOutput(n int) RegistryOption {
	return func(r *Registry) { r.maxOutput = n }
}

// WithAttachments makes Run keep the file a handler attaches (see Attach) in its result's
// Attachment, for a runtime that shows it to the model; without it, Attach fails.
func WithAttachments() RegistryOption {
	return func(r *Registry) { r.attachments = true }
}

// Registry holds an agent's tools and runs calls to them. It is safe for concurrent use.
type Registry struct {
	maxOutput   int
	attachments bool

	mu    sync.RWMutex
	tools map[string]entry
}

type entry struct {
	tool   Tool
	schema *node
}

// NewRegistry returns a registry holding tools. It fails, naming the tool, if a tool cannot be
// registered (see [Registry.Add]).
func NewRegistry(tools []Tool, opts ...RegistryOption) (*Registry, error) {
	r := &Registry{maxOutput: DefaultMaxOutput, tools: make(map[string]entry, len(tools))}
	for _, o := range opts {
		o(r)
	}
	for _, t := range tools {
		if err := r.Add(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

var nameRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Add registers a tool. The error wraps [ErrInvalidTool] and names the tool if its name is
// empty, not 1–64 characters of [A-Za-z0-9_-], or already taken, if its handler is nil, or if
// its schema is not a usable JSON Schema object with root "type":"object".
func (r *Registry) Add(t Tool) error {
	if t.Name == "" {
		return fmt.Errorf("%w: empty name (description %q)", ErrInvalidTool, t.Description)
	}
	if !nameRe.MatchString(t.Name) {
		return fmt.Errorf("%w %q: name must be 1-64 characters of A-Z a-z 0-9 _ -", ErrInvalidTool, t.Name)
	}
	if t.Handler == nil {
		return fmt.Errorf("%w %q: nil handler", ErrInvalidTool, t.Name)
	}
	s, err := compileSchema(t.Schema)
	if err != nil {
		return fmt.Errorf("%w %q: %v", ErrInvalidTool, t.Name, err)
	}
	if len(s.types) != 1 || s.types[0] != "object" {
		return fmt.Errorf("%w %q: schema root must have \"type\":\"object\"", ErrInvalidTool, t.Name)
	}
	t.Schema = bytes.Clone(t.Schema)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[t.Name]; dup {
		return fmt.Errorf("%w %q: a tool with this name is already registered", ErrInvalidTool, t.Name)
	}
	r.tools[t.Name] = entry{tool: t, schema: s}
	return nil
}

// Get returns the tool named name.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	if !ok {
		return Tool{}, false
	}
	t := e.tool
	t.Schema = bytes.Clone(t.Schema)
	return t, true
}

// Tools returns every tool, sorted by name.
func (r *Registry) Tools() []Tool {
	r.mu.RLock()
	out := make([]Tool, 0, len(r.tools))
	for _, e := range r.tools {
		t := e.tool
		t.Schema = bytes.Clone(t.Schema)
		out = append(out, t)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (r *Registry) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Guidance returns the guidance of every tool that has some, for the system prompt: one
// "## Tool: name" section per tool, sorted by name, separated by blank lines. It is empty if
// no tool has guidance.
func (r *Registry) Guidance() string {
	names := r.names()
	r.mu.RLock()
	defer r.mu.RUnlock()
	size := 0 // at most what is written: one allocation
	for _, name := range names {
		size += len("\n\n## Tool: \n") + len(name) + len(r.tools[name].tool.Guidance)
	}
	var b strings.Builder
	b.Grow(size)
	for _, name := range names {
		g := strings.TrimSpace(r.tools[name].tool.Guidance)
		if g == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("## Tool: ")
		b.WriteString(name)
		b.WriteByte('\n')
		b.WriteString(g)
	}
	return b.String()
}

// Run runs the calls of one model response and returns one result per call, in the order of
// calls. Consecutive calls of safe tools run concurrently; a call of an unsafe tool (and a call
// of an unknown tool) runs alone, after every call before it has finished. Problems become error
// results, never panics or errors of Run: an unknown tool, arguments that are malformed or do
// not match the schema, a handler's error or panic. Once ctx is done, calls not yet started get
// an error result saying they were not run; calls already running get ctx and are waited for.
func (r *Registry) Run(ctx context.Context, calls []Call) []Result {
	results := make([]Result, len(calls))
	for i := 0; i < len(calls); {
		// A batch is a run of consecutive safe calls, or a single other call.
		j := i + 1
		if r.isSafe(calls[i].Name) {
			for j < len(calls) && r.isSafe(calls[j].Name) {
				j++
			}
		}
		if err := ctx.Err(); err != nil {
			for k := i; k < len(calls); k++ {
				results[k] = r.finish(calls[k], fmt.Sprintf("tool %q was not run: %v", calls[k].Name, context.Cause(ctx)), true)
			}
			break
		}
		if j-i == 1 {
			results[i] = r.runOne(ctx, calls[i])
		} else {
			var wg sync.WaitGroup
			for k := i; k < j; k++ {
				wg.Go(func() { results[k] = r.runOne(ctx, calls[k]) })
			}
			wg.Wait()
		}
		i = j
	}
	return results
}

func (r *Registry) isSafe(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	return ok && e.tool.Safe
}

// runOne runs a single call and turns every failure into an error result.
func (r *Registry) runOne(ctx context.Context, c Call) Result {
	r.mu.RLock()
	e, ok := r.tools[c.Name]
	r.mu.RUnlock()
	if !ok {
		return r.finish(c, fmt.Sprintf("unknown tool %q; available tools: %s", c.Name, strings.Join(r.names(), ", ")), true)
	}
	args := normalizeArgs(c.Args)
	if err := e.schema.validate(args); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			var b strings.Builder
			fmt.Fprintf(&b, "invalid arguments for tool %q; fix these and call it again:", c.Name)
			for _, p := range ve.Problems {
				b.WriteString("\n- " + p)
			}
			if ve.Omitted > 0 {
				fmt.Fprintf(&b, "\n- and %d more", ve.Omitted)
			}
			return r.finish(c, b.String(), true)
		}
		return r.finish(c, fmt.Sprintf("invalid arguments for tool %q: %v; send the arguments as one JSON object matching the tool's schema", c.Name, err), true)
	}
	ctx = context.WithValue(ctx, callKey{}, c)
	var attached *attachment
	if r.attachments {
		attached = &attachment{}
		ctx = context.WithValue(ctx, attachKey{}, attached)
	}
	out, err := callHandler(ctx, e.tool, args)
	if err != nil {
		return r.finish(c, err.Error(), true)
	}
	res := r.finish(c, out, false)
	if attached != nil {
		res.Attachment = attached.get()
	}
	return res
}

type callKey struct{}

// CallFrom returns the call a handler is answering, when the handler runs under Registry.Run:
// its ID is a natural idempotency key for a handler whose call may be repeated after a crash.
func CallFrom(ctx context.Context) (Call, bool) {
	c, ok := ctx.Value(callKey{}).(Call)
	return c, ok
}

// panicError reports a handler's panic.
type panicError struct {
	tool  string
	value any
}

func (p *panicError) Error() string {
	return fmt.Sprintf("tool %q failed with an internal error (panic: %v)", p.tool, p.value)
}

func callHandler(ctx context.Context, t Tool, args json.RawMessage) (out string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{tool: t.Name, value: v}
		}
	}()
	return t.Handler(ctx, args)
}

// finish builds a result, applying the output cap.
func (r *Registry) finish(c Call, content string, isErr bool) Result {
	res := Result{CallID: c.ID, Name: c.Name, Content: content, IsError: isErr}
	if r.maxOutput > 0 && len(content) > r.maxOutput {
		cut := r.maxOutput
		for cut > 0 && !utf8.RuneStart(content[cut]) {
			cut--
		}
		res.Content = content[:cut] + fmt.Sprintf("\n[output truncated: %d of %d bytes cut]", len(content)-cut, len(content))
		res.Truncated = true
	}
	return res
}
