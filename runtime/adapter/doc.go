// Package adapter is what the authors of runtime adapters share: an Emitter that stamps an
// assignment's events, the Report through which a worker ends its assignment, and the work tools
// that report into it (publish, checkpoint, suggest_next, create_work_node) and carry its messages.
// The harnessed, Claude Code and autonomous-CLI runtimes are built on it.
//
// It imports the runtime port and the tools core; never a runtime, nor the squad.
package adapter
