// Package tools defines the tools an agent can call and runs the calls a model makes.
//
// A [Tool] is a name, a one-line description, the JSON Schema of its arguments, optional
// guidance (the longer "how to use it well" text that goes into a system prompt) and a
// [Handler]. [Func] builds a tool from a typed Go function, deriving the schema from the
// argument struct; a tool can also be written by hand with its own schema.
//
// A [Registry] holds the tools of an agent and runs a model response's calls with
// [Registry.Run]: every call gets exactly one [Result], and nothing a model sends — an unknown
// tool, arguments that do not match the schema, malformed JSON — nor anything a handler does
// (an error, a panic) crashes the caller. Such problems become error results, phrased so the
// model can read them and fix its next call.
//
//	type ReadArgs struct {
//		Path  string `json:"path" jsonschema:"description=File to read (relative to the workspace)"`
//		Limit int    `json:"limit,omitempty" jsonschema:"description=Maximum lines to return,minimum=1"`
//	}
//
//	read := tools.Func("read_file", "Read a text file.",
//		func(ctx context.Context, a ReadArgs) (string, error) { return readFile(a.Path, a.Limit) },
//		tools.Safe(), tools.WithGuidance("Read a file before you edit it."))
//	reg, err := tools.NewRegistry([]tools.Tool{read})
//	if err != nil { ... }
//	results := reg.Run(ctx, []tools.Call{{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"go.mod"}`)}})
//
// # Schemas from Go structs
//
// [Func] reflects the argument struct with github.com/invopop/jsonschema into a self-contained
// schema (no $ref, root "type":"object", additionalProperties false):
//
//   - the `json` tag names a property; `json:"-"` hides a field;
//   - a field is required unless its `json` tag has omitempty (a pointer alone does not make a
//     field optional);
//   - the `jsonschema` tag adds keywords: description=..., enum=a,enum=b, minimum=, maximum=,
//     minLength=, maxLength=, minItems=, maxItems=, default=...; commas separate keywords, so
//     write a comma in a description as \, or put the description in its own
//     `jsonschema_description:"..."` tag, where commas are plain text.
//
// # Validation
//
// [Validate] checks arguments against a schema. It implements the subset of JSON Schema that
// [Func] produces and hand-written tool schemas commonly use: type (including type arrays),
// properties, required, additionalProperties (false or a schema), items, enum, const,
// minimum/maximum, exclusiveMinimum/exclusiveMaximum, minLength/maxLength and
// minItems/maxItems. Other keywords (anyOf, $ref, pattern, format, ...) are accepted and ignored.
//
// # Running calls
//
// Consecutive calls of [Safe] tools run concurrently; a call of an unsafe tool runs alone, after
// every call before it has finished, so tools whose effects depend on order behave as the model
// wrote them. Output is capped (see [WithMaxOutput]).
package tools
