package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/server/host"
)

// stepSummary is a step in the list of a run's steps: its state without its board.
type stepSummary struct {
	Tick       int    `json:"tick"`
	Checkpoint string `json:"checkpoint"`
	Time       string `json:"time"`
	Stage      int    `json:"stage"`
	Finished   bool   `json:"finished,omitempty"`
	Question   string `json:"question,omitempty"`
	Output     string `json:"output,omitempty"`
	Nodes      int    `json:"nodes"`
	Workers    int    `json:"workers"`
	Messages   int    `json:"messages"`
	// Changed lists the nodes and workers the tick changed.
	Changed []string `json:"changed,omitempty"`
}

// stepChange is what a tick changed of a node or a worker: each field that changed, as it was
// before and as it is after (null when it had none).
type stepChange struct {
	ID     string            `json:"id"`
	Kind   string            `json:"kind"` // node or worker
	Added  bool              `json:"added,omitempty"`
	Fields map[string][2]any `json:"fields"`
}

// handleSteps answers the steps of a run, one a tick.
func (s *Server) handleSteps(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	run := r.PathValue("run")
	steps, err := a.Steps(r.Context(), run)
	if err != nil {
		hostError(w, err)
		return
	}
	out := make([]stepSummary, len(steps))
	for i, st := range steps {
		out[i] = stepSummary{Tick: st.Tick, Checkpoint: st.Checkpoint, Time: st.Time.UTC().Format("2006-01-02T15:04:05.000Z"),
			Stage: st.Stage, Finished: st.Finished, Question: st.Question, Output: st.Output,
			Nodes: len(st.Nodes), Workers: len(st.Workers), Messages: st.Messages, Changed: st.Changed}
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": run, "steps": out})
}

// handleStep answers one step of a run: its state and board, and its diff to the step before.
func (s *Server) handleStep(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	run := r.PathValue("run")
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 1 {
		writeError(w, http.StatusBadRequest, "bad step %s: want a tick, a whole number >= 1", shown(r.PathValue("n")))
		return
	}
	steps, err := a.Steps(r.Context(), run)
	if err != nil {
		hostError(w, err)
		return
	}
	i := slices.IndexFunc(steps, func(st nodes.Step) bool { return st.Tick == n })
	if i < 0 {
		writeError(w, http.StatusNotFound, "agent %q: run %q has no step %d (it has %d)", a.ID(), run, n, len(steps))
		return
	}
	var prev nodes.Step
	if i > 0 {
		prev = steps[i-1]
	}
	diff, err := stepDiff(prev, steps[i])
	if err != nil {
		writeError(w, http.StatusInternalServerError, "agent %q: run %q: step %d: %v", a.ID(), run, n, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": run, "step": steps[i], "diff": diff})
}

// stepDiff returns what changed of the board from step prev to step cur, node by node and worker
// by worker, field by field.
func stepDiff(prev, cur nodes.Step) ([]stepChange, error) {
	out := []stepChange{}
	for _, kind := range []string{"node", "worker"} {
		var before, after []any
		if kind == "node" {
			before, after = anys(prev.Nodes), anys(cur.Nodes)
		} else {
			before, after = anys(prev.Workers), anys(cur.Workers)
		}
		was, err := byID(before)
		if err != nil {
			return nil, err
		}
		is, err := byID(after)
		if err != nil {
			return nil, err
		}
		for _, id := range slices.Sorted(maps.Keys(is)) {
			old, a := was[id], is[id]
			c := stepChange{ID: id, Kind: kind, Added: old == nil, Fields: map[string][2]any{}}
			keys := maps.Keys(a)
			for k := range old {
				if _, ok := a[k]; !ok {
					c.Fields[k] = [2]any{old[k], nil}
				}
			}
			for k := range keys {
				if x, y := fmt.Sprint(old[k]), fmt.Sprint(a[k]); old == nil || x != y {
					c.Fields[k] = [2]any{old[k], a[k]}
				}
			}
			if len(c.Fields) > 0 {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// anys returns xs as a slice of any.
func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// byID returns the nodes or workers xs as JSON objects, by their "id".
func byID(xs []any) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	for _, x := range xs {
		b, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		id, _ := m["id"].(string)
		out[id] = m
	}
	return out, nil
}

// handleFork starts a new run from a tick of one of the agent's runs (see host.Agent.Fork), or,
// with "agent", a new agent holding it (host.Agent.ForkAgent).
func (s *Server) handleFork(w http.ResponseWriter, r *http.Request, a *host.Agent) {
	var req struct {
		Tick             int    `json:"tick"`
		CoordinatorModel string `json:"coordinator_model"`
		// WorkerModel gives every worker (or the one Worker names) another model.
		WorkerModel string `json:"worker_model"`
		Worker      string `json:"worker"`
		Answer      string `json:"answer"`
		// NodeSpec gives a node not done at the tick another task.
		NodeSpec *struct {
			Node string `json:"node"`
			Task string `json:"task"`
		} `json:"node_spec"`
		// Agent, when set, is the id of a new agent the fork is made into (see host.Agent.ForkAgent).
		Agent string `json:"agent"`
	}
	if !s.decode(w, r, &req, false) {
		return
	}
	if req.Tick < 1 {
		writeError(w, http.StatusBadRequest, "bad field \"tick\": want the tick to fork from, a whole number >= 1")
		return
	}
	if !s.modelAllowed(w, "coordinator_model", req.CoordinatorModel) || !s.modelAllowed(w, "worker_model", req.WorkerModel) ||
		req.Answer != "" && !s.text(w, "answer", req.Answer) {
		return
	}
	if req.Worker != "" && req.WorkerModel == "" {
		writeError(w, http.StatusBadRequest, "bad field \"worker\": it names the worker that worker_model is for; give worker_model too")
		return
	}
	var opts []nodes.ForkOption
	if req.CoordinatorModel != "" {
		opts = append(opts, nodes.ForkWithCoordinatorModel(req.CoordinatorModel))
	}
	if req.WorkerModel != "" {
		opts = append(opts, nodes.ForkWithWorkerModel(req.Worker, req.WorkerModel))
	}
	if req.NodeSpec != nil {
		if req.NodeSpec.Node == "" || !s.text(w, "node_spec.task", req.NodeSpec.Task) {
			if req.NodeSpec.Node == "" {
				writeError(w, http.StatusBadRequest, "bad field \"node_spec.node\": it is empty; name the node whose task changes")
			}
			return
		}
		opts = append(opts, nodes.ForkWithNodeTask(req.NodeSpec.Node, req.NodeSpec.Task))
	}
	if req.Agent != "" {
		if err := workspace.ValidID(req.Agent); err != nil {
			writeError(w, http.StatusBadRequest, "bad field \"agent\": %s", strings.TrimPrefix(err.Error(), "workspace: "))
			return
		}
		started, err := a.ForkAgent(r.Context(), r.PathValue("run"), req.Tick, req.Agent, req.Answer, opts...)
		if err != nil {
			hostError(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, started)
		return
	}
	started, err := a.Fork(r.Context(), r.PathValue("run"), req.Tick, req.Answer, opts...)
	if err != nil {
		hostError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, started)
}
