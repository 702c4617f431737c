// Package workspace is the on-disk layout of an agent — its home, its runs, the runs' work
// nodes and workers — and the file-access scopes that keep each worker to what it may read
// and write.
//
// The layout:
//
//	{home}/                         Home: permanent, across runs
//	├── SOUL.md                     identity                          Home.Soul
//	├── GOAL.md                     the big objective                 Home.Goal
//	├── MEMORY.md                   curated long-term memory          Home.Memory
//	├── memory/                     knowledge store                   Home.MemoryDir
//	├── conversation.jsonl          conversation with the human (a view) Home.Conversation
//	├── events.jsonl                all events, append-only (a view)  Home.Events
//	├── triggers.json               scheduled triggers (before the store) Home.Triggers
//	└── runs/
//	    └── {run}/                  Run: one execution                Home.Run
//	        ├── _plan.md            the collaboration plan            Run.Plan
//	        ├── _messages/          the messages, a file each (views)  Run.Messages
//	        ├── coordinator/        the coordinator's own files       Run.Coordinator
//	        ├── nodes/
//	        │   └── {node}/         a work node (runtime.NodeDir)     Run.Node
//	        │       ├── _spec.md    what to do                        Spec
//	        │       ├── _refs.json  pointers to upstream published/   Refs (when it has some)
//	        │       ├── _status.md  status and summary                Status
//	        │       ├── scratch/    work in progress                  runtime.NodeDir.Scratch
//	        │       ├── published/  outputs, immutable                runtime.NodeDir.Published
//	        │       └── log.jsonl   execution trace                   Log
//	        └── workers/
//	            └── {worker}/       Worker: a worker's private folder Run.Worker
//	                ├── identity.md         who the worker is         Worker.Identity
//	                ├── memory.md           what it has learned       Worker.Memory
//	                ├── notebook.md         its scratchpad            Worker.Notebook
//	                ├── history.jsonl       nodes it has completed    Worker.History
//	                └── conversation.jsonl  its LLM conversation      Worker.Conversation
//
// A squad keeps its runs' records — state, boards, events, the conversation — in its store
// (package nodes/store, state.db in the home); the files marked as views, and a node's _spec.md,
// _refs.json and _status.md, are written from it for agents and people to read.
//
// The path types ([Home], [Run], [Worker] and [runtime.NodeDir]) are plain strings: their
// methods only join paths, except Create and the listing methods, which touch the disk. Node
// and worker ids are single path components; check them with [ValidID] before use.
//
// [WriteFile], [WriteJSON] and [AppendJSONL] write state files so that a crash or a concurrent
// reader never sees a partial file (or, for JSONL, a partial line); [WriteView] writes a file
// derived from others atomically, without syncing it.
//
// [WorkerScope] and [CoordinatorScope] are file-access policies for the file tools of
// package tools/files, rooted at a run's folder: a worker reads its node's brief, its scratch,
// every node's published outputs, its own folder and the plan, and writes only its scratch,
// notebook and memory; the coordinator reads the whole run and writes the plan, node specs
// and refs, and its own folder.
package workspace
