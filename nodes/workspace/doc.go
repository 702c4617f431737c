// Package workspace is the on-disk layout of an agent — its home, its runs, the runs' work
// nodes and workers — and the file-access scopes that keep each worker to what it may read
// and write.
//
// The path types [Home], [Run], [Worker] and [runtime.NodeDir] are plain strings whose methods
// join paths (Home.Run, Run.Node, Run.Worker…); node and worker ids are single path components,
// checked with [ValidID]. [WriteFile], [WriteJSON] and [AppendJSONL] write state files that a
// crash or a concurrent reader never sees partial. [WorkerScope] and [CoordinatorScope] are the
// file-access policies of package tools/files for a run's folder.
//
// The layout, file by file, is in docs/squad.md (The agent's folders).
package workspace
