package nodes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agiraph/agiraph/tools"
)

// toolNames are the names of the built-in tools a worker can be given.
var toolNames = []string{
	"read_file", "write_file", "edit_file", "list_files", "read_ref",
	"bash", "web_fetch", "web_search",
	"memory_read", "memory_search", "memory_write",
	"schedule", "list_triggers", "cancel_trigger",
}

// ToolNames returns the names of the built-in tools of a squad's workers, among which
// [WithTools] and spawn_worker's tools choose. The work tools (publish, checkpoint, the messages,
// ask_human...) are every worker's, and the tools of [WithWorkerTools] and of MCP servers are
// chosen by their own options.
func ToolNames() []string { return slices.Clone(toolNames) }

// CheckTools checks that each of names is a tool of [ToolNames]; the error names the first that
// is not.
func CheckTools(names []string) error { return checkTools(names, toolNames) }

// checkTools checks that each of names is among allowed.
func checkTools(names, allowed []string) error {
	for _, n := range names {
		if !slices.Contains(allowed, n) {
			return fmt.Errorf("no tool %q for workers (the tools: %s)", n, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// WithTools limits the built-in tools of the squad's workers to names (see [ToolNames]), and
// spawn_worker's tools to a choice among them. By default a worker has them all. New fails on a
// name that is not one.
func WithTools(names ...string) Option {
	return func(c *config) { c.toolNames = append(c.toolNames, names...) }
}

// teamToolNames returns the built-in tools the squad's workers may be given.
func (r *run) teamToolNames() []string {
	if len(r.cfg.toolNames) > 0 {
		return r.cfg.toolNames
	}
	return toolNames
}

// chosenTools keeps, of ts, the tools worker w may use: a built-in tool only when it is among
// the worker's tools (or the squad's, when the worker has none chosen).
func (r *run) chosenTools(w Worker, ts []tools.Tool) []tools.Tool {
	allowed := w.Tools
	if len(allowed) == 0 {
		allowed = r.teamToolNames()
	}
	return slices.DeleteFunc(ts, func(t tools.Tool) bool {
		return slices.Contains(toolNames, t.Name) && !slices.Contains(allowed, t.Name)
	})
}
