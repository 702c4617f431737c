package workspace

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/files"
)

// Scope is a file-access policy for the file tools of a run: it implements [files.Policy]
// and [files.Lister] for tools rooted at a [Run]'s folder, so every path it judges is
// relative to runs/{run}/. Paths are cleaned first ("nodes/n2/published/../scratch/x" is
// judged as "nodes/n2/scratch/x"), and paths that leave the run folder are refused.
//
// A worker's scope ([WorkerScope]), for worker W assigned to node N:
//
//   - read: _plan.md; nodes/N/_spec.md, nodes/N/_refs.json and nodes/N/_status.md;
//     nodes/N/scratch/ and everything in it; nodes/{any}/published/ and everything in it
//     (every node's outputs); workers/W/ and everything in it (its own files). Not
//     _messages/ (messages come through the message bus), not another node's scratch/ or
//     brief, not another worker's folder, not the coordinator's folder, not a node's log.
//   - write: nodes/N/scratch/ and everything in it; workers/W/notebook.md and
//     workers/W/memory.md. Nothing else: published/ is immutable, and the brief, the plan and
//     the worker's identity and history are written by the runtime and the coordinator.
//   - list: the folders it may read, and the folders on the way to them: the run folder
//     ("."), nodes/, every nodes/{any}/ (where only published/ shows for other nodes), and
//     workers/ (where only its own folder shows). list_files shows only the entries a scope
//     lets it read or list.
//
// The coordinator's scope ([CoordinatorScope]) reads and lists everything in the run and
// writes _plan.md, nodes/{any}/_spec.md, nodes/{any}/_refs.json, and coordinator/ and
// everything in it. It cannot create node folders through the file tools (creating
// nodes/{id}/ is not writing one of those files): the runtime makes them with
// runtime.NodeDir.Create.
//
// Refusals are errors matching [files.ErrDenied], whose messages name the path and say what
// is allowed: they are meant for the model. The zero Scope allows nothing. A Scope is a small
// value, safe for concurrent use.
type Scope struct {
	kind   scopeKind
	node   string
	worker string
	err    error // an invalid id given to WorkerScope: everything is refused
}

type scopeKind int

const (
	noScope scopeKind = iota
	workerScope
	coordinatorScope
)

// WorkerScope returns the scope of worker worker assigned to node node; see [Scope] for its
// rules. If either id fails [ValidID], the scope refuses everything, saying why.
func WorkerScope(node, worker string) Scope {
	s := Scope{kind: workerScope, node: node, worker: worker}
	if err := ValidID(node); err != nil {
		s.err = fmt.Errorf("node %w", err)
	} else if err := ValidID(worker); err != nil {
		s.err = fmt.Errorf("worker %w", err)
	}
	return s
}

// CoordinatorScope returns the scope of the run's coordinator; see [Scope] for its rules.
func CoordinatorScope() Scope { return Scope{kind: coordinatorScope} }

// Node returns the node of a worker's scope ("" for the coordinator's).
func (s Scope) Node() string { return s.node }

// Worker returns the worker of a worker's scope ("" for the coordinator's).
func (s Scope) Worker() string { return s.worker }

// String describes the scope, as "worker w1 on node n1", "coordinator" or "no access".
func (s Scope) String() string {
	switch s.kind {
	case workerScope:
		return fmt.Sprintf("worker %q on node %q", s.worker, s.node)
	case coordinatorScope:
		return "coordinator"
	}
	return "no access"
}

// Tools returns the file tools (read_file, write_file, edit_file, list_files) rooted at run
// and confined by s, with opts; see [files.Tools].
func (s Scope) Tools(run Run, opts ...files.Option) []tools.Tool {
	return files.Tools(string(run), s, opts...)
}

// deniedError is a refusal for the model; it matches files.ErrDenied.
type deniedError struct{ msg string }

func (e *deniedError) Error() string        { return e.msg }
func (e *deniedError) Is(target error) bool { return target == files.ErrDenied }

func denied(format string, args ...any) error {
	return &deniedError{msg: fmt.Sprintf(format, args...)}
}

type op int

const (
	opRead op = iota
	opWrite
	opList
)

func (o op) verb() string {
	switch o {
	case opWrite:
		return "writing"
	case opList:
		return "listing"
	}
	return "reading"
}

// CanRead allows rel if s may read it; see [Scope].
func (s Scope) CanRead(rel string) error { return s.check(opRead, rel) }

// CanWrite allows rel if s may write it; see [Scope].
func (s Scope) CanWrite(rel string) error { return s.check(opWrite, rel) }

// CanList allows rel if s may list it as a directory: if it may read it, or if it is a
// folder on the way to what it may read; see [Scope].
func (s Scope) CanList(rel string) error {
	if s.check(opRead, rel) == nil {
		return nil
	}
	return s.check(opList, rel)
}

func (s Scope) check(o op, rel string) error {
	rel = path.Clean(filepath.ToSlash(rel))
	if rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
		return denied("%s %q is not allowed: paths are relative to the run folder and may not leave it", o.verb(), rel)
	}
	var p []string
	if rel != "." {
		p = strings.Split(rel, "/")
	}
	switch s.kind {
	case workerScope:
		if s.err != nil {
			return denied("%s %q is not allowed: this scope allows nothing, because its %v", o.verb(), rel, s.err)
		}
		if s.workerAllows(o, p) {
			return nil
		}
		return denied("%s %q is not allowed%s; %s may %s", o.verb(), rel, s.workerHint(o, p), s, s.workerAllowed(o))
	case coordinatorScope:
		if o != opWrite || coordinatorWrites(p) {
			return nil
		}
		return denied("%s %q is not allowed%s; the coordinator may write only _plan.md, nodes/{node}/_spec.md, nodes/{node}/_refs.json and files in coordinator/",
			o.verb(), rel, coordinatorHint(p))
	}
	return denied("%s %q is not allowed: no files may be accessed in this workspace", o.verb(), rel)
}

// workerAllows applies a worker's rules to the cleaned path components p.
func (s Scope) workerAllows(o op, p []string) bool {
	n := len(p)
	ownNode := n >= 2 && p[0] == nodesDir && p[1] == s.node
	ownFolder := n >= 2 && p[0] == workersDir && p[1] == s.worker
	inScratch := ownNode && n >= 3 && p[2] == scratchDir
	switch o {
	case opRead:
		switch {
		case n == 1 && p[0] == planFile,
			ownNode && n == 3 && (p[2] == specFile || p[2] == refsFile || p[2] == statusFile),
			inScratch,
			n >= 3 && p[0] == nodesDir && p[2] == publishedDir,
			ownFolder:
			return true
		}
	case opWrite:
		switch {
		case inScratch,
			ownFolder && n == 3 && (p[2] == notebookFile || p[2] == memoryFile):
			return true
		}
	case opList:
		switch {
		case n == 0,
			n == 1 && (p[0] == nodesDir || p[0] == workersDir),
			n == 2 && p[0] == nodesDir:
			return true
		}
	}
	return false
}

// workerHint says why a worker may not access p, when there is more to say than the rules.
func (s Scope) workerHint(o op, p []string) string {
	n := len(p)
	switch {
	case n >= 1 && p[0] == messagesDir && o != opWrite:
		return ": messages are not read as files, they arrive through the message bus"
	case n >= 2 && p[0] == workersDir && p[1] != s.worker:
		return fmt.Sprintf(": workers/%s/ is another worker's private folder", p[1])
	case n >= 3 && p[0] == nodesDir && p[2] == publishedDir && o == opWrite:
		return fmt.Sprintf(": published outputs are immutable; write in nodes/%s/scratch/ and publish", s.node)
	case n >= 3 && p[0] == nodesDir && p[1] != s.node && p[2] == scratchDir:
		return fmt.Sprintf(": nodes/%s/scratch/ is private to the worker of node %s; its outputs appear in nodes/%s/published/ once published", p[1], p[1], p[1])
	case n >= 3 && p[0] == nodesDir && p[1] != s.node:
		return fmt.Sprintf(": of node %s, only its published outputs (nodes/%s/published/) may be read", p[1], p[1])
	case n == 3 && p[0] == workersDir && o == opWrite:
		return ": of your own folder, you may write only notebook.md and memory.md"
	case n == 3 && p[0] == nodesDir && o == opWrite && (p[2] == specFile || p[2] == refsFile || p[2] == statusFile):
		return ": the node's brief and status are kept by the coordinator and the runtime"
	}
	return ""
}

// workerAllowed says what a worker may do, for refusals.
func (s Scope) workerAllowed(o op) string {
	switch o {
	case opWrite:
		return fmt.Sprintf("write only in nodes/%[1]s/scratch/ and workers/%[2]s/notebook.md and workers/%[2]s/memory.md", s.node, s.worker)
	case opList:
		return fmt.Sprintf(`list only the run folder ("."), nodes/, nodes/{node}/, workers/ and the folders it may read: nodes/%[1]s/scratch/, nodes/{node}/published/ and workers/%[2]s/`, s.node, s.worker)
	}
	return fmt.Sprintf("read only _plan.md, nodes/%[1]s/_spec.md, nodes/%[1]s/_refs.json, nodes/%[1]s/_status.md, files in nodes/%[1]s/scratch/, files in any node's published/ (nodes/{node}/published/) and files in its own folder workers/%[2]s/", s.node, s.worker)
}

// coordinatorWrites applies the coordinator's write rules to the cleaned path components p.
func coordinatorWrites(p []string) bool {
	n := len(p)
	switch {
	case n == 1 && p[0] == planFile,
		n == 3 && p[0] == nodesDir && (p[2] == specFile || p[2] == refsFile),
		n >= 1 && p[0] == coordinatorDir:
		return true
	}
	return false
}

// coordinatorHint says why the coordinator may not write p, when there is more to say.
func coordinatorHint(p []string) string {
	n := len(p)
	switch {
	case n >= 3 && p[0] == nodesDir && p[2] == publishedDir:
		return ": published outputs are immutable"
	case n >= 3 && p[0] == nodesDir && p[2] == scratchDir:
		return ": a node's scratch/ belongs to the worker assigned to it"
	case n >= 1 && p[0] == workersDir:
		return ": workers' folders belong to the workers"
	case n >= 1 && p[0] == messagesDir:
		return ": messages are sent through the message bus, not written as files"
	}
	return ""
}
