package providers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/agiraph/agiraph/tools"
)

// Output asks a model for an answer that is a JSON value of a schema: structured output.
//
// An adapter whose API has a native mode for it sends the schema there (Anthropic's
// output_config.format, OpenAI's response_format of type json_schema, which OpenRouter, Ollama
// and Gemini's OpenAI-compatible endpoint take too); one without states it in the system prompt
// (see [PromptOutput]). Either way the answer's text is the JSON value. No API checks every
// keyword of a schema, and a prompted model may answer anything: [Generate] and [GenerateJSON]
// validate the answer and ask again on a mismatch.
type Output struct {
	// Name names the result to the provider: 1 to 64 characters from [A-Za-z0-9_-]
	// ("result" when empty).
	Name string
	// Schema is the JSON Schema of the answer; its root must be "type":"object", as the
	// providers require. [SchemaFor] derives one from a Go type.
	Schema json.RawMessage
	// Strict asks a provider that has the choice (OpenAI) to constrain the answer to the schema
	// exactly; the schema must then list every property as required and close every object
	// with additionalProperties false.
	Strict bool
	// Repairs is how many times [GenerateJSON] asks again, showing the model what is wrong, when
	// an answer does not match the schema: DefaultRepairs when 0, none when negative.
	Repairs int
}

// DefaultRepairs is how many repair turns [GenerateJSON] sends when Output.Repairs is 0.
const DefaultRepairs = 2

// outputName is what an Output's name may be.
var outputName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Check reports what is wrong with o: a bad name, or a schema CheckSchema refuses.
func (o *Output) Check() error {
	if o.Name != "" && !outputName.MatchString(o.Name) {
		return fmt.Errorf("providers: output name %q: use 1 to 64 characters from A-Z, a-z, 0-9, _ and -", o.Name)
	}
	if err := CheckSchema(o.Schema); err != nil {
		return fmt.Errorf("providers: output %s: %w", o.ResultName(), err)
	}
	return nil
}

// CheckSchema reports what is wrong with schema as the schema of a structured answer: it must
// be a JSON Schema the validator takes (see package tools), with "type":"object" at its root.
func CheckSchema(schema json.RawMessage) error {
	var root struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(schema, &root) != nil || root.Type != "object" {
		return errors.New(`the schema must be a JSON object with "type":"object" at its root`)
	}
	var v *tools.ValidationError
	if err := tools.ValidateAt(schema, json.RawMessage(`{}`), "result"); err != nil && !errors.As(err, &v) {
		return err // the schema's own problem, not the empty object's
	}
	return nil
}

// ResultName returns the output's name, or "result" when it has none: what an adapter sends.
func (o *Output) ResultName() string { return cmp.Or(o.Name, "result") }

// SchemaFor returns the JSON Schema of the Go type t for an Output: that of a tool's arguments
// (see tools.SchemaFor), from the same generator. t must be a struct or a pointer to one.
func SchemaFor(t reflect.Type) (json.RawMessage, error) {
	elem := t
	if elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	if elem.Kind() != reflect.Struct {
		return nil, fmt.Errorf("providers: result type %s must be a struct or a pointer to one: a model's structured answer is a JSON object", t)
	}
	return tools.SchemaFor(elem), nil
}

// OutputFor returns the Output of the Go type T: its schema (see SchemaFor) and its name.
func OutputFor[T any]() (*Output, error) {
	t := reflect.TypeFor[T]()
	schema, err := SchemaFor(t)
	if err != nil {
		return nil, err
	}
	return &Output{Name: typeName(t), Schema: schema}, nil
}

// typeName returns a name for the type t fit for Output.Name.
func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := strings.Map(func(r rune) rune {
		if r < 128 && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, t.Name())
	if name == "" {
		return "result"
	}
	return name[:min(len(name), 64)]
}

// OutputError is returned by [GenerateJSON] and [Generate] when the model's answer did not
// match the schema, repair turns included, or the model refused to answer.
type OutputError struct {
	Model    string // the model's "provider/model" name
	Name     string // the output's name: the Go type's for Generate
	Attempts int    // how many answers the model gave
	Answer   string // the last answer's text
	// Err says what is wrong with the last answer: a *tools.ValidationError naming each failing
	// path, an error wrapping tools.ErrMalformedArgs when it is not JSON, or ErrRefused.
	Err error
}

// ErrRefused is the cause of an OutputError when the model declined to answer (StopRefusal).
var ErrRefused = errors.New("the model refused to answer")

func (e *OutputError) Error() string {
	return fmt.Sprintf("providers: %s gave no valid %s (answers: %d): %v", e.Model, e.Name, e.Attempts, e.Err)
}

func (e *OutputError) Unwrap() error { return e.Err }

// PromptOutput returns req for a model with no native structured output: without Output, and
// with a system prompt that gives the schema and asks for an answer of only a JSON value of it.
// It returns req unchanged when it has no Output.
func PromptOutput(req Request) Request {
	if req.Output == nil {
		return req
	}
	var b strings.Builder
	if s := strings.TrimRight(req.System, "\n"); s != "" {
		b.WriteString(s + "\n\n")
	}
	fmt.Fprintf(&b, "# Answer format\n\nAnswer with only a JSON object, the %s, matching this JSON Schema: no code fences, no other text.\n\n%s\n",
		req.Output.ResultName(), req.Output.Schema)
	req.System = b.String()
	req.Output = nil
	return req
}

// GenerateJSON asks m for an answer of req.Output's schema and returns it once it is valid:
// the answer's text, checked against the schema. An answer that does not match gets repair
// turns, up to Output.Repairs: the answer and a message that shows the model what is wrong and
// the schema again. It then fails with an *OutputError naming the output and the failing paths.
// The Response is the last answer's, with the usage of every answer summed.
//
// req must offer no tools: the answer is final. A code fence around the JSON is tolerated.
func GenerateJSON(ctx context.Context, m Model, req Request) (json.RawMessage, Response, error) {
	out := req.Output
	if out == nil {
		return nil, Response{}, errors.New("providers: GenerateJSON: the request has no Output")
	}
	if err := out.Check(); err != nil {
		return nil, Response{}, err
	}
	if len(req.Tools) > 0 {
		return nil, Response{}, fmt.Errorf("providers: GenerateJSON: the request for %s offers tools; a structured answer is a final one, so run the tool loop first", out.ResultName())
	}
	repairs := out.Repairs
	if repairs == 0 {
		repairs = DefaultRepairs
	}
	req.Messages = append([]Message(nil), req.Messages...)
	var usage Usage
	for attempt := 1; ; attempt++ {
		resp, err := m.Generate(ctx, req)
		if err != nil {
			return nil, resp, err
		}
		usage = usage.Add(resp.Usage)
		resp.Usage = usage
		text := resp.Message.Text()
		answer := unfence(text)
		err = tools.ValidateAt(out.Schema, answer, out.ResultName())
		if resp.StopReason == StopRefusal {
			err = ErrRefused
		}
		if err == nil {
			return answer, resp, nil
		}
		if attempt > repairs || err == ErrRefused {
			return nil, resp, &OutputError{Model: m.Name(), Name: out.ResultName(), Attempts: attempt, Answer: text, Err: err}
		}
		req.Messages = append(req.Messages, resp.Message, UserText(fmt.Sprintf(
			"Your answer is not a valid %s: %v.\n\nAnswer again with only a JSON object matching this JSON Schema, and nothing else:\n\n%s",
			out.ResultName(), err, out.Schema)))
	}
}

// Generate asks m for an answer of type T and decodes it: GenerateJSON with req.Output
// derived from T (see OutputFor). A req.Output given without a schema keeps its other fields
// (Strict, Repairs; Name when set) and gets T's schema.
func Generate[T any](ctx context.Context, m Model, req Request) (T, Response, error) {
	var v T
	out, err := OutputFor[T]()
	if err != nil {
		return v, Response{}, err
	}
	if o := req.Output; o != nil {
		if len(o.Schema) > 0 {
			return v, Response{}, fmt.Errorf("providers: Generate[%s]: the request's Output has a schema of its own; leave it out or call GenerateJSON", out.Name)
		}
		given := *o
		given.Schema, given.Name = out.Schema, cmp.Or(o.Name, out.Name)
		out = &given
	}
	req.Output = out
	raw, resp, err := GenerateJSON(ctx, m, req)
	if err != nil {
		return v, resp, err
	}
	if err := json.Unmarshal(raw, &v); err != nil { // valid, yet not a T: a value out of a Go type's range
		return v, resp, fmt.Errorf("providers: Generate[%s]: decoding %s's valid answer: %w", out.ResultName(), m.Name(), err)
	}
	return v, resp, nil
}

// unfence returns text without surrounding space and a Markdown code fence around it, if any.
func unfence(text string) json.RawMessage {
	s := strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(s, "```"); ok && strings.HasSuffix(rest, "```") {
		rest = strings.TrimSuffix(rest, "```")
		if i := strings.IndexByte(rest, '\n'); i >= 0 && !strings.ContainsAny(rest[:i], "{[") {
			rest = rest[i+1:] // the fence's language tag
		}
		s = strings.TrimSpace(rest)
	}
	return json.RawMessage(s)
}
