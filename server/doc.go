// Package server is a local HTTP API over agents, so that a web UI, a CLI or another program can
// create agents, talk to them and watch them work. Each agent is a [nodes.Squad] whose home is
// <root>/agents/<id>/; a [Server] keeps them, runs them in the background and re-opens them when
// it starts again.
//
// Every request carries the server's token, as "Authorization: Bearer <token>" or in the cookie
// that opening [Server.LoginURL] sets ([WithToken]; by default a random one made on first start
// and kept in <root>/token, mode 0600; [WithoutAuth] for a program with its own). The guard
// before the API also refuses a Host that is not allowed (loopback names, [WithAddr],
// [WithAllowedHosts]), a request from an origin that is neither the server's nor allowed
// ([WithAllowedOrigins], which also get CORS), and a POST whose body is not declared
// application/json (one with no body may declare nothing) — what a cross-site form or a rebound
// DNS name could send. What models wrote is served inert: every answer but the web UI's carries a
// sandboxing Content-Security-Policy and nosniff, and a file's raw bytes are served as text, a
// passive image or a download. A request may name
// only the models of [WithModels]; goals, messages and answers over [WithMaxText] are refused;
// runs beyond [WithMaxRuns] are "queued". One server holds a root at a time (an OS lock on it),
// unless it is a replica of a fleet (see Replicas).
//
// Bodies and answers are JSON; errors are {"error": "..."} naming what is wrong, with status 400
// for a bad body or field, 401 without the token, 403 for a host, origin or model not allowed and
// for a folder that is a symbolic link, 404 for an unknown agent, node, run, file or route, 405 for
// a method a route does not take, 409 when a run is already in progress or none is (the error
// says what can be done instead), when nobody waits for the answer a request gives, or when the
// agent is damaged, 413 for a text over the limit, 415 for a body not declared JSON, and 503 when
// the server is closed, or the disk failed a write (no space left, say: nothing was done; try
// again once it is fixed). An error quotes at most the first bytes of what the request sent. A
// run that a disk's failure ends is "failed", its error saying so, and POST /resume continues it
// once the disk is fixed; it is not damage.
//
//	GET    /                                the web UI (package ui); its files under /ui/. Served without the token
//	GET    /models                          the models a new agent may name: {"models": ["", ...]} ("" is the server's choice)
//	       /mcp                             the same operations as MCP tools (streamable HTTP; see below)
//	POST   /agents                          create an agent and start a run: {"id"?, "goal", "model"?, "mode"? "finite"|"infinite"} → 201 summary
//	GET    /agents                          the agents' summaries: {"agents": [...]}
//	GET    /agents/{id}                     an agent's summary (see [Summary])
//	DELETE /agents/{id}                     pause its run and forget the agent for good (its files stay)
//	POST   /agents/{id}/runs                start another run: {"goal"} → 202 summary
//	POST   /agents/{id}/stop                stop the run's workers (Squad.Stop); the run stays in progress
//	POST   /agents/{id}/pause               pause the run in progress → summary, "paused" until /resume
//	POST   /agents/{id}/resume              resume a paused, interrupted or failed run, the last by default:
//	                                        {"run"?} → 202 summary
//	POST   /agents/{id}/send                a message from the human: {"to"?, "message"}; /nudge is the same.
//	                                        To the coordinator of an agent that never ran, or whose last run
//	                                        completed, it starts a run toward the message → 202 summary
//	POST   /agents/{id}/respond             answer a question: {"worker"?, "response"} (default: the one waiting)
//	GET    /agents/{id}/conversation        the conversation, ?after=N&limit=M: {"entries", "total"}
//	GET    /agents/{id}/board               the board of the current (or last) run: {"nodes", "workers"}
//	GET    /agents/{id}/board/{node}        a node: {"node", "spec", "published"}
//	GET    /agents/{id}/workers             the run's workers: {"workers": [...]}
//	GET    /agents/{id}/workspace/{path...} a file of the run folder: {"path", "content"} (raw bytes with ?raw=1:
//	                                        text as text/plain, a PNG, JPEG, GIF, WebP, BMP or icon as itself,
//	                                        anything else as a download), or a directory's listing:
//	                                        {"path", "entries": [{"name", "dir", "size"}]}
//	GET    /agents/{id}/memory              the memory files: {"files": [...]}
//	GET    /agents/{id}/memory/{path...}    a memory file: {"path", "content"}
//	POST   /agents/{id}/memory/search       {"query", "limit"?} → {"result"}
//	GET    /agents/{id}/events              logged events, ?after=N&limit=M: {"events": [...]}
//	GET    /agents/{id}/events/stream       server-sent events after ?after=N (or Last-Event-ID):
//	                                        "id: <seq>\nevent: <type>\ndata: <event JSON>\n\n"; while a run
//	                                        is in progress, also the models' text as it is generated, live
//	                                        only (not logged, no id): "event: text.delta\ndata: <event JSON>\n\n",
//	                                        the event with seq 0, the worker, the node (none for the
//	                                        coordinator) and the piece of text
//
// At /mcp the server speaks the Model Context Protocol (streamable HTTP), behind the same guard:
// an MCP client that sends the token can list_agents, create_agent, get_agent, start_run,
// send_message, answer_question, stop_agent, pause_agent, resume_agent, get_board, get_node, read_file,
// get_conversation and get_events. Each tool runs the API's request in-process and answers with
// its JSON; what the API refuses comes back as a tool error with the API's message.
//
// An agent's status is "idle" (no run yet), "working" (a run in progress), "waiting_for_human"
// (a run in progress in which a worker or the coordinator waits for an answer), "paused" (POST
// /pause paused the last run; POST /resume continues it where it was), "interrupted" (the last
// run was paused before it finished: the server closed, or was killed; POST /resume continues
// it), "completed" (the last run finished; its output is in the summary; a message starts a
// follow-up run, which keeps the agent's memory), "failed" (the last run ended with an error,
// in the summary; POST /resume continues it), "queued" (a run waits
// for a place among the runs in progress) or "damaged" (the agent's files could not be opened:
// the summary's error names the file; the other agents are served). While a run seems
// stuck (nothing moved in it for its stall window), the summary's "stalled" says what it
// waits on.
//
// Stopping the server is pausing: [Server.Close] interrupts the runs in progress, and [New]
// resumes by itself, in the background, the runs that were in progress when the server
// stopped, whether it closed or was killed ([WithoutResume] leaves them interrupted). POST
// /stop is not an interruption: it stops the workers, and the run stays in progress. An
// infinite agent whose run is not in progress is resumed when one of its triggers comes due,
// as POST /resume would.
//
// An agent with no run in progress is at rest: the server holds no file of it open and runs no
// goroutine for it. New reads each agent's meta (agent.json; a fleet's registry) and its
// triggers (in its store), nothing more; an agent's other files are checked (nodes.Files.Check) when it is first shown or used, and read
// directly to answer the requests on it (summary, events, board, conversation, workspace,
// memory). Its squad opens for a run, and closes when the run ends; a request on the run in
// progress finds it open. One alarm for all the agents at rest (triggers.Alarm) opens an
// agent's squad when its next trigger comes due, so that the trigger fires — on time, into the
// agent's latest run, which it resumes — and the squad closes again. Damage a listing does not
// read (the middle of events.jsonl) is found when the squad opens: the agent is then damaged.
//
// # Replicas
//
// With [WithPostgres] (or [WithPostgresPool]) the server is a replica of a fleet: any number of
// server processes on one PostgreSQL database, each with a root folder of its own or one they
// share (the root is not locked then), and each serves every agent of the fleet:
//
//   - The registry of agents (table agiraph_server_agents) says which agents exist, with each
//     agent's meta (status, run, output, goal, model, times), which any replica reads and the
//     replica holding the agent writes: an agent created or deleted through one replica is
//     listed, or forgotten, by all. No agent.json is written (one from before the registry
//     kept meta is read until the agent's meta is next written).
//   - The checkpoints and the stores of all agents live in the database (checkpoint/postgres,
//     nodes/store/pgstore), their threads and rows apart by the agent's id; no state.db is made.
//     The store has the boards, events, conversations and messages, and the files a run needs
//     (a node's published outputs, the workers' own files, the agent's memory; see package
//     nodes): a replica that opens an agent's squad writes back, under <root>/agents/<id>/, what
//     its folder lacks, and a run it takes over without its folder starts again the attempts
//     that were in progress (their scratch files were the other replica's).
//   - Each agent has a lease in its registry row (owner, base URL, generation, expires_at),
//     held by the replica that has its squad open or runs it, and renewed by a heartbeat
//     ([WithLease]; by default a TTL of 10 s renewed every 2 s, internal/lease as package runner
//     does). A run executes in one replica at a time, so its event and message logs have one
//     writer. A replica that cannot renew the lease before it may expire cancels the run first.
//     The row names the run in progress; every replica's watchdog (every second by default)
//     takes over a run whose lease expired — its replica died — or that a closing replica handed
//     over, and resumes it from its checkpoints (Squad.Resume): within the TTL plus the watch
//     interval. Stopping a replica hands its runs over to the others at once.
//   - Summaries, boards, conversations and logged events are answered by any replica, from the
//     database. Reads of the agent's files (a node's details, the workspace, memory) and
//     operations on a run — POST runs, resume, stop, pause, send, nudge, respond, DELETE and the
//     event stream — are forwarded to the replica that holds the agent's lease, at the base URL
//     it registered ([WithBaseURL], or made of [WithAddr]; it must be an allowed host there),
//     with the server's token, which all replicas share ([WithToken]; <root>/token only when
//     they share their root). Forwarding, rather than passing signals through the database,
//     keeps one owner per fact: the squad that runs an agent is the only one that sends its
//     messages, answers its questions and streams its models' text as it comes, with no polling
//     and nothing new to persist. An operation on an agent no replica holds is done by the
//     replica that receives it, which takes the lease; a read of the files of an agent at rest
//     shows those of the replica that receives it (all of them when the replicas share their
//     folder, or on the replica that ran the agent last).
//   - Triggers fire once: the replica holding an agent's lease fires them (its squad's
//     scheduler), and a replica whose alarm finds the lease held elsewhere does nothing but look
//     again a heartbeat later; a trigger fired is recorded in the agent's store before the lease is
//     let go, so the next holder finds it fired.
//
// A run whose replica lost its lease may still write to the agent's files while its workers
// stop, should they ignore their context; the watchdog takes over only once the lease expired.
// Without WithPostgres nothing of this applies: SQLite and local files stay the default.
//
// The server writes nothing to the standard streams; [WithLogger] says where it, and the
// agents' squads, report what they cannot answer or log as events.
package server
