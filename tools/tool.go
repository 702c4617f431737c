package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/invopop/jsonschema"
)

// Handler runs one call of a tool. args are the call's arguments as JSON; they have been
// validated against the tool's schema when the call comes through [Registry.Run]. The returned
// string is what the model reads; a non-nil error becomes an error result carrying the error's
// message, so it should say what went wrong in words a model can act on.
type Handler func(ctx context.Context, args json.RawMessage) (string, error)

// Tool is something an agent can call.
type Tool struct {
	// Name identifies the tool in calls: 1 to 64 characters from [A-Za-z0-9_-], as the model
	// providers require.
	Name string
	// Description is a one-line summary the model sees beside the schema.
	Description string
	// Schema is the JSON Schema of the arguments; its root must be "type":"object".
	Schema json.RawMessage
	// Guidance is the longer "how to use it well" text that goes into the system prompt
	// (see [Registry.Guidance]). It may be empty.
	Guidance string
	// Safe marks a tool whose calls may run concurrently with other calls of the same model
	// response: it neither changes state other calls read nor depends on their effects.
	Safe bool
	// Idempotent marks a tool whose call, run again (the same call, by its ID), does not do
	// twice what it did: its handler keys its effects by the call. A runtime that saves its
	// progress step by step may run consecutive calls of idempotent tools in one step, saved
	// once, since a crash in the middle runs them all again harmlessly.
	Idempotent bool
	// Handler runs a call.
	Handler Handler
}

// Option configures a tool built by [Func].
type Option func(*Tool)

// WithGuidance sets the tool's [Tool.Guidance].
func WithGuidance(guidance string) Option {
	return func(t *Tool) { t.Guidance = guidance }
}

// Safe marks the tool as safe to run concurrently with other calls (see [Tool.Safe]).
func Safe() Option {
	return func(t *Tool) { t.Safe = true }
}

// Idempotent marks the tool's calls as safe to run again (see [Tool.Idempotent]).
func Idempotent() Option {
	return func(t *Tool) { t.Idempotent = true }
}

// Func builds a tool from a typed function. The schema is derived from A (see the package
// documentation for the struct tags it reads); the handler validates the arguments against
// it, decodes them into an A and calls fn.
//
// A must be a struct or a pointer to a struct, since tool arguments are a JSON object. Any other
// type, like a nil fn, is a programming error and Func panics, naming the tool, when the tool is
// defined — not when a model first calls it.
func Func[A any](name, description string, fn func(ctx context.Context, args A) (string, error), opts ...Option) Tool {
	typ := reflect.TypeFor[A]()
	isPtr := typ.Kind() == reflect.Pointer
	elem := typ
	if isPtr {
		elem = typ.Elem()
	}
	if elem.Kind() != reflect.Struct {
		panic(fmt.Sprintf("tools.Func: tool %q: argument type %s must be a struct or a pointer to a struct", name, typ))
	}
	if fn == nil {
		panic(fmt.Sprintf("tools.Func: tool %q: nil function", name))
	}
	schema, compiled, err := schemaOf(elem)
	if err != nil { // cannot happen for reflected schemas; guard all the same
		panic(fmt.Sprintf("tools.Func: tool %q: derived schema is not usable: %v", name, err))
	}
	t := Tool{
		Name:        name,
		Description: description,
		Schema:      slices.Clone(schema), // the tool's own: the reflected one is shared
		Handler: func(ctx context.Context, args json.RawMessage) (string, error) {
			args = normalizeArgs(args)
			if err := compiled.validate(args); err != nil {
				return "", err
			}
			ptr := reflect.New(elem)
			if err := json.Unmarshal(args, ptr.Interface()); err != nil {
				return "", fmt.Errorf("decoding arguments: %w", err)
			}
			var a A
			if isPtr {
				a = ptr.Interface().(A)
			} else {
				a = ptr.Elem().Interface().(A)
			}
			return fn(ctx, a)
		},
	}
	for _, o := range opts {
		o(&t)
	}
	return t
}

// SchemaFor returns the JSON Schema [Func] derives for the struct type t (or pointer to
// struct): inline, with root "type":"object", additionalProperties false and no $schema or $id.
// It is exported for tools that write their own handler but want a derived schema.
func SchemaFor(t reflect.Type) json.RawMessage {
	schema, _, _ := schemaOf(t)
	return slices.Clone(schema)
}

// reflected holds the schema of each argument type reflected so far, with its compiled form:
// tools are made again and again from the same types (a worker's tools for each of its runs).
var reflected sync.Map // reflect.Type → reflectedSchema

type reflectedSchema struct {
	schema   json.RawMessage
	compiled *node
	err      error
}

// schemaOf returns the schema of t (see SchemaFor) and its compiled form, reflected once.
func schemaOf(t reflect.Type) (json.RawMessage, *node, error) {
	if r, ok := reflected.Load(t); ok {
		r := r.(reflectedSchema)
		return r.schema, r.compiled, r.err
	}
	schema := reflectSchema(t)
	compiled, err := compileSchema(schema)
	reflected.Store(t, reflectedSchema{schema, compiled, err})
	return schema, compiled, err
}

// reflectSchema derives the JSON Schema of t.
func reflectSchema(t reflect.Type) json.RawMessage {
	r := jsonschema.Reflector{
		DoNotReference:            true,
		ExpandedStruct:            true,
		Anonymous:                 true,
		AllowAdditionalProperties: false,
	}
	s := r.ReflectFromType(t)
	s.Version = ""
	s.ID = ""
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("tools.SchemaFor(%s): %v", t, err))
	}
	return b
}
