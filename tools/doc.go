// Package tools defines the tools an agent can call and runs the calls a model makes.
//
// A [Tool] is a name, a one-line description, the JSON Schema of its arguments, optional
// guidance for a system prompt and a [Handler]. [Func] builds a tool from a typed Go function,
// deriving the schema from the argument struct. A [Registry] holds an agent's tools and runs a
// model response's calls with [Registry.Run]: every call gets exactly one [Result], and nothing
// a model sends nor anything a handler does crashes the caller; such problems become error
// results the model can read and fix its next call by.
//
//	read := tools.Func("read_file", "Read a text file.",
//		func(ctx context.Context, a ReadArgs) (string, error) { return readFile(a.Path, a.Limit) },
//		tools.Safe())
//	reg, err := tools.NewRegistry([]tools.Tool{read})
//	results := reg.Run(ctx, calls)
//
// Schemas from Go structs, validation and how calls run are in docs/tools.md.
//
// It imports none of the engine, providers, runtimes or squad (internal/layers checks this).
package tools
