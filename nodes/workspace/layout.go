package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/tools/files"
)

// Names of the files and folders of the layout, relative to their parent folder.
const (
	soulFile         = "SOUL.md"
	goalFile         = "GOAL.md"
	homeMemoryFile   = "MEMORY.md"
	homeMemoryDir    = "memory"
	conversationFile = "conversation.jsonl"
	eventsFile       = "events.jsonl"
	triggersFile     = "triggers.json"
	runsDir          = "runs"

	planFile       = "_plan.md"
	messagesDir    = "_messages"
	coordinatorDir = "coordinator"
	nodesDir       = "nodes"
	workersDir     = "workers"

	specFile     = "_spec.md"
	refsFile     = "_refs.json"
	statusFile   = "_status.md"
	scratchDir   = "scratch"
	publishedDir = "published"
	identityFile = "identity.md"
	memoryFile   = "memory.md"
	notebookFile = "notebook.md"
	historyFile  = "history.jsonl"
	dirPerm      = 0o755
	defaultPerm  = 0o644
)

// Home is an agent's home directory: permanent, across runs. Its layout is in docs/squad.md
// (The agent's folders).
type Home string

func (h Home) path(name string) string { return filepath.Join(string(h), name) }

// Soul returns the path of SOUL.md, the agent's identity.
func (h Home) Soul() string { return h.path(soulFile) }

// Goal returns the path of GOAL.md, the agent's objective.
func (h Home) Goal() string { return h.path(goalFile) }

// Memory returns the path of MEMORY.md, the agent's curated long-term memory.
func (h Home) Memory() string { return h.path(homeMemoryFile) }

// MemoryDir returns the path of memory/, the agent's knowledge store.
func (h Home) MemoryDir() string { return h.path(homeMemoryDir) }

// Conversation returns the path of conversation.jsonl, the conversation with the human.
func (h Home) Conversation() string { return h.path(conversationFile) }

// Events returns the path of events.jsonl, the agent's append-only event log.
func (h Home) Events() string { return h.path(eventsFile) }

// Triggers returns the path of triggers.json, the agent's scheduled triggers.
func (h Home) Triggers() string { return h.path(triggersFile) }

// Run returns the folder of run id, runs/{id}. The id is not checked; it should pass
// [ValidID].
func (h Home) Run(id string) Run { return Run(filepath.Join(string(h), runsDir, id)) }

// Runs returns the ids of the runs present under runs/, sorted: the names of its
// subdirectories that pass [ValidID]. A home without runs/ has no runs (and no error).
func (h Home) Runs() ([]string, error) { return listIDs(h.path(runsDir)) }

// Create makes the home directory, memory/ and runs/ if they do not exist. It does not
// create SOUL.md, GOAL.md or MEMORY.md.
func (h Home) Create() error {
	return mkdirs("home", string(h), h.MemoryDir(), h.path(runsDir))
}

// Run is one run's folder, runs/{id} in a [Home]. Its layout is in docs/squad.md (The agent's
// folders). The file tools of a run are rooted here, and [Scope] paths are relative to it.
type Run string

func (r Run) path(name string) string { return filepath.Join(string(r), name) }

// ID returns the run's id: the last element of its path.
func (r Run) ID() string { return filepath.Base(string(r)) }

// Home returns the home the run is in.
func (r Run) Home() Home { return Home(filepath.Dir(filepath.Dir(string(r)))) }

// Plan returns the path of _plan.md, the collaboration plan.
func (r Run) Plan() string { return r.path(planFile) }

// Messages returns the path of _messages/, the run's messages for people (a file each; a squad
// keeps the messages themselves in its store).
func (r Run) Messages() string { return r.path(messagesDir) }

// Coordinator returns the path of coordinator/, the coordinator's own folder in the run.
func (r Run) Coordinator() string { return r.path(coordinatorDir) }

// Node returns the folder of work node id, nodes/{id}. The id is not checked; it should pass
// [ValidID].
func (r Run) Node(id string) runtime.NodeDir {
	return runtime.NodeDir(filepath.Join(string(r), nodesDir, id))
}

// Worker returns the folder of worker id, workers/{id}. The id is not checked; it should
// pass [ValidID].
func (r Run) Worker(id string) Worker { return Worker(filepath.Join(string(r), workersDir, id)) }

// NodeIDs returns the ids of the nodes present under nodes/, sorted: the names of its
// subdirectories that pass [ValidID]. A run without nodes/ has no nodes (and no error).
func (r Run) NodeIDs() ([]string, error) { return listIDs(r.path(nodesDir)) }

// WorkerIDs returns the ids of the workers present under workers/, sorted: the names of its
// subdirectories that pass [ValidID]. A run without workers/ has no workers (and no error).
func (r Run) WorkerIDs() ([]string, error) { return listIDs(r.path(workersDir)) }

// Create makes the run folder, _messages/, coordinator/, nodes/ and workers/ if they do not
// exist. It does not create _plan.md.
func (r Run) Create() error {
	return mkdirs("run", string(r), r.Messages(), r.Coordinator(), r.path(nodesDir), r.path(workersDir))
}

// Nodes returns the path of nodes/, which holds a folder per node; a run that began has it.
func (r Run) Nodes() string { return r.path(nodesDir) }

// Worker is a worker's private folder, workers/{id} in a [Run].
type Worker string

func (w Worker) path(name string) string { return filepath.Join(string(w), name) }

// ID returns the worker's id: the last element of its path.
func (w Worker) ID() string { return filepath.Base(string(w)) }

// Identity returns the path of identity.md: who the worker is, its role.
func (w Worker) Identity() string { return w.path(identityFile) }

// Memory returns the path of memory.md: what the worker has learned in this run.
func (w Worker) Memory() string { return w.path(memoryFile) }

// Notebook returns the path of notebook.md, the worker's scratchpad.
func (w Worker) Notebook() string { return w.path(notebookFile) }

// History returns the path of history.jsonl: the nodes the worker has completed, one line each.
func (w Worker) History() string { return w.path(historyFile) }

// Conversation returns the path of conversation.jsonl, the worker's LLM conversation.
func (w Worker) Conversation() string { return w.path(conversationFile) }

// Create makes the worker's folder if it does not exist. It creates none of the files.
func (w Worker) Create() error { return mkdirs("worker", string(w)) }

// Spec returns the path of a node's _spec.md: what to do.
func Spec(d runtime.NodeDir) string { return d.Path(specFile) }

// Refs returns the path of a node's _refs.json: pointers to other nodes' published outputs.
func Refs(d runtime.NodeDir) string { return d.Path(refsFile) }

// Status returns the path of a node's _status.md: its status and summary.
func Status(d runtime.NodeDir) string { return d.Path(statusFile) }

func mkdirs(what string, dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, dirPerm); err != nil {
			return fmt.Errorf("workspace: create %s folder: %w", what, err)
		}
	}
	return nil
}

// listIDs returns the sorted names of the subdirectories of dir that are valid ids.
func listIDs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("workspace: list %s: %w", dir, files.Cause(err))
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && ValidID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	return ids, nil
}
