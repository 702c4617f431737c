package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/agiraph/agiraph/tools"
)

// ToolOptions configures the memory tools of one agent (see [Store.Tools]).
type ToolOptions struct {
	// By is who the tools write as: the agent's or worker's id, passed to [Store.Write].
	By string
	// CanWrite lets memory_write write. Without it memory_write refuses every call with an
	// error saying that writing agent memory needs the coordinator's permission.
	CanWrite bool
}

// WriteArgs are the arguments of memory_write.
type WriteArgs struct {
	Path    string `json:"path" jsonschema:"minLength=1" jsonschema_description:"File to write: relative to memory/ (like knowledge/python-asyncio.md or experiences/research-strategies.md), or MEMORY.md for the curated essentials. Only .md files."`
	Content string `json:"content" jsonschema_description:"Markdown to write. Give notes small ## section headers, each section self-contained, so memory_search can find them."`
	Mode    string `json:"mode,omitempty" jsonschema:"enum=append,enum=replace" jsonschema_description:"append (the default) adds content at the end of the file; replace overwrites the whole file with content."`
}

// ReadArgs are the arguments of memory_read.
type ReadArgs struct {
	Path string `json:"path" jsonschema:"minLength=1" jsonschema_description:"File to read: relative to memory/ (like index.md or knowledge/python-asyncio.md), or MEMORY.md."`
}

// SearchArgs are the arguments of memory_search.
type SearchArgs struct {
	Query string `json:"query" jsonschema:"minLength=1" jsonschema_description:"Keywords to look for, like: python asyncio event loop"`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50" jsonschema_description:"Maximum number of sections to return (default 10)"`
}

// ErrNoPermission is wrapped by the error memory_write returns when the agent may not write
// memory ([ToolOptions.CanWrite] is false).
var ErrNoPermission = errors.New("writing agent memory needs the coordinator's permission")

const writeGuidance = `memory_write: your long-term memory outlives this conversation and this run; what you do not write down is forgotten. Write durable notes, not transcripts:
- knowledge/<topic>.md — facts about a domain (knowledge/python-asyncio.md).
- experiences/<topic>.md — what worked and what didn't, and why (experiences/research-strategies.md).
- preferences/<topic>.md — the human's preferences and communication style (preferences/human-notes.md).
- MEMORY.md — the curated essentials you need at every session start; keep it short and replace it as it changes.
- The daily log (YYYY-MM-DD.md) is for what happened today.
Give every note small "## " section headers, one self-contained idea per section, with the words you would search for: memory_search returns whole sections. mode "append" (default) adds to a file; "replace" rewrites it. New files are listed in index.md automatically.`

const readGuidance = `memory_read: read one memory file whole, by its path (index.md lists what is stored where; MEMORY.md is the curated memory).`

const searchGuidance = `memory_search: before starting a task, search your memory for what you already know about it ("python asyncio", "human report format"). Small memories come back whole; larger ones as the best matching sections, each with its file's path.`

// Tools returns the memory tools for one agent: memory_write, memory_read and
// memory_search (the last two are [tools.Safe]), each with guidance for the system prompt.
func (s *Store) Tools(o ToolOptions) []tools.Tool {
	write := tools.Func("memory_write",
		"Write a note to your long-term memory (a .md file under memory/, or MEMORY.md).",
		func(ctx context.Context, a WriteArgs) (string, error) {
			if !o.CanWrite {
				return "", fmt.Errorf("memory_write refused: %w; report what you learned to the coordinator instead, and it can record it", ErrNoPermission)
			}
			appendMode := true
			switch a.Mode {
			case "", "append":
			case "replace":
				appendMode = false
			default:
				return "", fmt.Errorf("memory_write: mode %q is not known: use \"append\" or \"replace\"", a.Mode)
			}
			writes, err := s.write(o.By, a.Path, a.Content, appendMode)
			if err != nil {
				return "", err
			}
			verb := "Appended"
			if !appendMode {
				verb = "Wrote"
			}
			msg := fmt.Sprintf("%s %d bytes to %s.", verb, writes[0].Bytes, writes[0].Path)
			if len(writes) > 1 {
				msg += " Added a line for it to index.md."
			}
			return msg, nil
		},
		tools.WithGuidance(writeGuidance))
	read := tools.Func("memory_read",
		"Read one file of your long-term memory.",
		func(ctx context.Context, a ReadArgs) (string, error) {
			return s.Read(a.Path)
		},
		tools.Safe(), tools.WithGuidance(readGuidance))
	search := tools.Func("memory_search",
		"Search your long-term memory by words (and by meaning, when memory has an embedder); returns whole matching sections.",
		func(ctx context.Context, a SearchArgs) (string, error) {
			return s.SearchContext(ctx, a.Query, a.Limit)
		},
		tools.Safe(), tools.WithGuidance(searchGuidance))
	return []tools.Tool{write, read, search}
}
