// Package langgraphapi serves the LangGraph API — the Agent Protocol and what the official
// LangGraph SDKs call beyond it — for compiled graphs an embedder registers, so that the clients
// people already have (@langchain/langgraph-sdk, chat UIs built on it) run Agiraph graphs.
//
// A registered graph is an assistant (its ID is the graph ID, or the UUID LangGraph derives from
// it); a thread is a graph thread whose state lives in the graph's checkpointer; a run is an
// invocation of the graph on a thread, one at a time per thread. The API's own records —
// assistants, threads' metadata and status, runs and their status — live as documents of a
// nodes/store Store, so that a restarted handler finds them and continues the runs a stopped
// process left unfinished.
//
// Handler is an http.Handler with the API's routes at its root; it checks no token and no
// origin: mount it behind the server's guard. What differs from LangGraph's own server on purpose
// is listed in docs/langgraph-api.md.
//
// RegisterHost serves the agents of a server/host Host as the threads of one assistant: a thread
// is an agent, its runs follow the agent's runs, and the squad's questions to the human are
// interrupts that a command answers.
//
// It imports graph, checkpoint, nodes/store and server/host of the repository, and tools for the
// JSON schemas; nothing of the server it is mounted into.
package langgraphapi
