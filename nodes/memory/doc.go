// Package memory is an agent's long-term memory, kept in its home folder, and the tools
// agents use to write, read and search it.
//
// The memory of an agent lives in two places of its [workspace.Home]:
//
//	{home}/
//	├── MEMORY.md              curated long-term memory: the essentials, kept short
//	└── memory/
//	    ├── index.md           what is stored where (a line is added for every new file)
//	    ├── 2026-02-11.md      daily log: what happened that day, one "- HH:MM by: entry" a line
//	    ├── knowledge/         domain facts            (knowledge/python-asyncio.md)
//	    ├── experiences/       what worked, what didn't (experiences/research-strategies.md)
//	    └── preferences/       the human's preferences  (preferences/human-notes.md)
//
// A [Store] opened on a home reads and writes these files. Paths given to it are relative to
// memory/ ("knowledge/go.md"; a leading "memory/" is accepted too), except "MEMORY.md", which
// names the curated file. Only .md files can be used, and a path that leads outside memory/
// — with "..", as an absolute path, or through a symbolic link — is refused. memory/ and
// MEMORY.md themselves may not be symbolic links: [Open] refuses them, and should one appear
// later, reads, writes, searches and listings fail with an error naming it. Writes replace a
// file atomically or append to it with O_APPEND, and the first write to a file that index.md
// does not mention adds a line for it to index.md (daily logs are not listed).
//
// [Store.Search] follows the simple scheme of the design: when all memory (MEMORY.md and
// memory/**/*.md) fits in the budget it returns all of it, each file headed by its path, and
// the model searches by reading; otherwise it splits the files into sections at "## " and
// "### " headers, ranks them and returns the best whole sections. A store opened [WithIndex]
// ranks them with an [Index] (package nodes/memory/index: full text, and meaning with an
// embedder); without one it scores each section by the query's keywords, and this package
// links no database. [Store.Prompt] is what a coordinator's system prompt carries at session start:
// MEMORY.md, index.md and the last two days of logs. [Store.Tools] gives the agent
// memory_write, memory_read and memory_search.
package memory
