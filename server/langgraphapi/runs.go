package langgraphapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agiraph/agiraph/graph"
)

// Why a run's context was cancelled.
var (
	errInterrupt = errors.New("langgraphapi: the run was cancelled")
	errRollback  = errors.New("langgraphapi: the run was rolled back")
	errShutdown  = errors.New("langgraphapi: the handler was closed")
)

// command is a run's command: answers to interrupts, an update, nodes to go to.
type command struct {
	Resume json.RawMessage `json:"resume,omitempty"`
	Update json.RawMessage `json:"update,omitempty"`
	Goto   gotoList        `json:"goto,omitempty"`
}

// gotoList is a command's goto: a node name or a list of them.
type gotoList []string

func (g *gotoList) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*g = gotoList{one}
		return nil
	}
	var many []string
	if json.Unmarshal(b, &many) == nil {
		*g = many
		return nil
	}
	return errors.New("command.goto: give node names; a Send (node and input) is not supported")
}

// nodeList is interrupt_before or interrupt_after: "*" or node names.
type nodeList []string

func (n *nodeList) UnmarshalJSON(b []byte) error {
	if isNull(b) {
		*n = nil
		return nil
	}
	var all string
	if json.Unmarshal(b, &all) == nil {
		if all != "*" {
			return fmt.Errorf("interrupt_before/after: %q is neither \"*\" nor a list of nodes", all)
		}
		*n = nodeList{"*"}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("interrupt_before/after: give \"*\" or a list of nodes")
	}
	*n = many
	return nil
}

// expand returns the nodes the list names among the graph's nodes.
func (n nodeList) expand(e entry) ([]string, error) {
	if slices.Equal(n, nodeList{"*"}) {
		return e.nodes(), nil
	}
	for _, name := range n {
		if !slices.Contains(e.nodes(), name) {
			return nil, invalid("interrupt_before/after: the graph has no node %q", name)
		}
	}
	return n, nil
}

// runCreate is the body of the requests that create a run.
type runCreate struct {
	AssistantID       string          `json:"assistant_id"`
	Input             json.RawMessage `json:"input"`
	Command           *command        `json:"command"`
	Metadata          map[string]any  `json:"metadata"`
	Config            map[string]any  `json:"config"`
	StreamMode        json.RawMessage `json:"stream_mode"`
	StreamSubgraphs   bool            `json:"stream_subgraphs"`
	InterruptBefore   nodeList        `json:"interrupt_before"`
	InterruptAfter    nodeList        `json:"interrupt_after"`
	CheckpointID      string          `json:"checkpoint_id"`
	Checkpoint        *checkpointRef  `json:"checkpoint"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	IfNotExists       string          `json:"if_not_exists"`
	OnCompletion      string          `json:"on_completion"`
	OnDisconnect      string          `json:"on_disconnect"`
	AfterSeconds      float64         `json:"after_seconds"`
	Webhook           json.RawMessage `json:"webhook"`
}

// kwargs checks the request and returns what the run is to do.
func (q *runCreate) kwargs() (runKwargs, error) {
	kw := runKwargs{Input: q.Input, Command: q.Command, InterruptBefore: q.InterruptBefore, InterruptAfter: q.InterruptAfter,
		Config: q.Config, Subgraphs: q.StreamSubgraphs, CheckpointID: q.CheckpointID}
	if q.Checkpoint != nil && kw.CheckpointID == "" {
		kw.CheckpointID = q.Checkpoint.CheckpointID
	}
	if c, ok := q.Config["configurable"].(map[string]any); ok && kw.CheckpointID == "" {
		kw.CheckpointID, _ = c["checkpoint_id"].(string)
	}
	if !isNull(q.StreamMode) {
		var one string
		if json.Unmarshal(q.StreamMode, &one) == nil {
			kw.StreamMode = []string{one}
		} else if err := json.Unmarshal(q.StreamMode, &kw.StreamMode); err != nil {
			return kw, invalid("stream_mode: give a mode or a list of modes")
		}
	}
	if len(kw.StreamMode) == 0 {
		kw.StreamMode = []string{"values"}
	}
	for _, m := range kw.StreamMode {
		if !streamModes[m] {
			return kw, invalid("stream_mode: no mode %q", m)
		}
	}
	if q.Command != nil && !isNull(q.Input) {
		return kw, invalid("give input or command, not both")
	}
	if c := q.Command; c != nil && len(c.Update) > 0 && c.Update[0] == '[' {
		// An update given as [key, value] pairs.
		var pairs [][2]json.RawMessage
		if err := json.Unmarshal(c.Update, &pairs); err != nil {
			return kw, invalid("command.update: give an object or [key, value] pairs")
		}
		obj := map[string]json.RawMessage{}
		for _, p := range pairs {
			var k string
			if err := json.Unmarshal(p[0], &k); err != nil {
				return kw, invalid("command.update: a pair's key is not a string")
			}
			obj[k] = p[1]
		}
		c.Update = mustJSON(obj)
	}
	checks := []struct {
		name, value string
		allowed     []string
	}{
		{"multitask_strategy", q.MultitaskStrategy, []string{"reject", "enqueue", "interrupt", "rollback"}},
		{"if_not_exists", q.IfNotExists, []string{"create", "reject"}},
		{"on_completion", q.OnCompletion, []string{"delete", "keep"}},
		{"on_disconnect", q.OnDisconnect, []string{"cancel", "continue"}},
	}
	for _, c := range checks {
		if c.value != "" && !slices.Contains(c.allowed, c.value) {
			return kw, invalid("%s: %q is not one of %v", c.name, c.value, c.allowed)
		}
	}
	switch {
	case q.AfterSeconds > 0:
		return kw, invalid("after_seconds: delayed runs are not supported")
	case !isNull(q.Webhook):
		return kw, invalid("webhook: webhooks are not supported")
	}
	return kw, nil
}

// activeRun is a run in flight: pending or running.
type activeRun struct {
	rec    run
	e      entry
	fn     runFunc
	ctx    context.Context
	cancel context.CancelCauseFunc
	log    *runLog
}

// lane is a thread's runs in flight, run one after the other.
type lane struct {
	runs []*activeRun
	done chan struct{} // closed when the lane has no run left
}

type createMode int

const (
	modeBackground createMode = iota
	modeStream
	modeWait
)

func (h *Handler) createRun(mode createMode) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		var q runCreate
		if err := readJSON(r, &q); err != nil {
			return err
		}
		a, rec, err := h.startRun(r.Context(), r.PathValue("thread"), &q)
		if err != nil {
			return err
		}
		loc := "/threads/" + rec.ThreadID + "/runs/" + rec.RunID
		if r.PathValue("thread") == "" {
			loc = "/runs/" + rec.RunID
		}
		w.Header().Set("Content-Location", loc)
		var gone func()
		if q.OnDisconnect == "cancel" {
			gone = func() { a.cancel(errInterrupt) }
		}
		switch mode {
		case modeStream:
			w.Header().Set("Location", loc+"/stream")
			a.log.stream(w, r, 0, gone)
		case modeWait:
			a.log.wait(w, r, gone)
		default:
			writeJSON(w, http.StatusOK, rec)
		}
		return nil
	}
}

// startRun creates a run on a thread ("" for a stateless run, on a thread of its own) and queues
// it. It returns the run and its record as created.
func (h *Handler) startRun(ctx context.Context, threadID string, q *runCreate) (*activeRun, run, error) {
	kw, err := q.kwargs()
	if err != nil {
		return nil, run{}, err
	}
	if q.AssistantID == "" {
		return nil, run{}, invalid("assistant_id: missing")
	}
	a, e, err := h.assistant(ctx, q.AssistantID)
	if err != nil {
		return nil, run{}, err
	}
	kw.Config = mergeConfig(a.Config, kw.Config)
	for _, l := range []nodeList{kw.InterruptBefore, kw.InterruptAfter} {
		if _, err := l.expand(e); err != nil {
			return nil, run{}, err
		}
	}
	fn, err := e.prepare(&kw, false)
	if err != nil {
		return nil, run{}, err
	}
	strategy := q.MultitaskStrategy
	if strategy == "" {
		strategy = "reject"
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx.Err() != nil {
		return nil, run{}, &apiError{http.StatusServiceUnavailable, "the server is shutting down"}
	}
	now := time.Now().UTC()
	t := &thread{}
	if threadID == "" {
		kw.Temporary = q.OnCompletion != "keep"
		t = &thread{ThreadID: newID(), CreatedAt: now, Metadata: map[string]any{}, Config: map[string]any{}}
	} else if found, err := h.rec.get(ctx, threadKey(threadID), t); err != nil {
		return nil, run{}, err
	} else if !found {
		if q.IfNotExists != "create" {
			return nil, run{}, notFound("no thread %q (create it, or run with if_not_exists \"create\")", threadID)
		}
		t = &thread{ThreadID: threadID, CreatedAt: now, Metadata: map[string]any{}, Config: map[string]any{}}
	}
	var inflight []*activeRun
	if ln := h.lanes[t.ThreadID]; ln != nil {
		inflight = slices.DeleteFunc(slices.Clone(ln.runs), func(r *activeRun) bool { return r.ctx.Err() != nil })
	}
	if len(inflight) > 0 {
		switch strategy {
		case "reject":
			return nil, run{}, conflict("thread %s is busy: run %s is in flight (wait for it, or choose multitask_strategy enqueue, interrupt or rollback)", t.ThreadID, inflight[0].rec.RunID)
		case "interrupt":
			for _, r := range inflight {
				r.cancel(errInterrupt)
			}
		case "rollback":
			for _, r := range inflight {
				r.cancel(errRollback)
			}
		}
	}
	if t.Metadata == nil {
		t.Metadata = map[string]any{}
	}
	if len(inflight) == 0 || strategy != "enqueue" { // a queued run leaves the thread to the graph of the runs before
		t.Metadata["graph_id"], t.Metadata["assistant_id"] = e.id(), a.AssistantID
	}
	t.Status, t.UpdatedAt = threadBusy, now
	rec := run{
		RunID: newID(), ThreadID: t.ThreadID, AssistantID: a.AssistantID, CreatedAt: now, UpdatedAt: now,
		Status: runPending, Metadata: q.Metadata, Kwargs: kw, MultitaskStrategy: strategy,
	}
	if rec.Metadata == nil {
		rec.Metadata = map[string]any{}
	}
	var c change
	c.put(threadKey(t.ThreadID), t)
	c.put(runKey(t.ThreadID, rec.RunID), rec)
	if err := h.rec.apply(ctx, &c); err != nil {
		return nil, run{}, err
	}
	return h.enqueue(rec, e, fn), rec, nil
}

// enqueue adds a run to its thread's lane, starting the lane when it was idle. h.mu is held.
func (h *Handler) enqueue(rec run, e entry, fn runFunc) *activeRun {
	ctx, cancel := context.WithCancelCause(h.ctx)
	a := &activeRun{rec: rec, e: e, fn: fn, ctx: ctx, cancel: cancel, log: newRunLog()}
	h.logs[rec.RunID] = a.log
	ln := h.lanes[rec.ThreadID]
	if ln == nil {
		ln = &lane{done: make(chan struct{})}
		h.lanes[rec.ThreadID] = ln
		h.wg.Add(1)
		go h.work(rec.ThreadID, ln)
	}
	ln.runs = append(ln.runs, a)
	close(h.queued)
	h.queued = make(chan struct{})
	return a
}

// work carries out a thread's runs one after the other until none is left.
func (h *Handler) work(threadID string, ln *lane) {
	defer h.wg.Done()
	for {
		h.mu.Lock()
		a := ln.runs[0]
		h.mu.Unlock()
		result := h.execute(a)
		a.cancel(nil)
		h.mu.Lock()
		ln.runs = ln.runs[1:]
		last := len(ln.runs) == 0
		if last {
			delete(h.lanes, threadID)
			close(ln.done)
		}
		h.mu.Unlock()
		// Ended once it has left the lane: who waited for it finds the thread free.
		a.log.end(result)
		if last {
			return
		}
	}
}

// execute carries out one run, records how it ended and returns what waiting for it answers.
func (h *Handler) execute(a *activeRun) json.RawMessage {
	kw := a.rec.Kwargs
	tr := newTranslator(a.e.id(), a.rec, kw.StreamMode, kw.Subgraphs)
	var runErr error
	if h.ctx.Err() != nil {
		// The handler is closing. It cancels its runs' contexts one after the other, so the lane
		// may reach this run before its cancellation has: the run waits for it, and stays
		// pending in the records for the next handler, rather than start after Close.
		<-a.ctx.Done()
	}
	if a.ctx.Err() == nil {
		a.rec.Status = runRunning
		runErr = h.saveRun(a)
		a.log.add("metadata", map[string]any{"run_id": a.rec.RunID, "attempt": 1})
		tr.begin(a.log.add, a.rec.RunID, kw.Input)
	}
	if a.ctx.Err() == nil && runErr == nil {
		opts, err := runOptions(a, tr)
		runErr = err
		if err == nil {
			for ev, err := range a.fn(a.ctx, a.rec.ThreadID, opts) {
				if err != nil {
					runErr = err
					break
				}
				tr.event(ev, a.log.add)
			}
		}
	}
	return h.finish(a, tr, runErr)
}

// mergeConfig is a run's config: the assistant's, with what the run gives over it (its
// configurable merged into the assistant's).
func mergeConfig(base, over map[string]any) map[string]any {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range over {
		bc, ok1 := out[k].(map[string]any)
		oc, ok2 := v.(map[string]any)
		if k == "configurable" && ok1 && ok2 {
			merged := maps.Clone(bc)
			maps.Copy(merged, oc)
			v = merged
		}
		out[k] = v
	}
	return out
}

// runOptions are the graph options of a run.
func runOptions(a *activeRun, tr *translator) ([]graph.Option, error) {
	kw := a.rec.Kwargs
	opts := []graph.Option{graph.WithThread(a.rec.ThreadID), graph.WithRunID(a.rec.RunID), graph.WithStreamMode(tr.graphModes())}
	if kw.CheckpointID != "" {
		opts = append(opts, graph.WithCheckpointID(kw.CheckpointID))
	}
	if kw.Subgraphs {
		opts = append(opts, graph.WithSubgraphs())
	}
	if n, ok := kw.Config["recursion_limit"].(float64); ok && n > 0 {
		opts = append(opts, graph.WithRecursionLimit(int(n)))
	}
	before, err := kw.InterruptBefore.expand(a.e)
	if err != nil {
		return nil, err
	}
	after, err := kw.InterruptAfter.expand(a.e)
	if err != nil {
		return nil, err
	}
	if len(before) > 0 {
		opts = append(opts, graph.WithInterruptBefore(before...))
	}
	if len(after) > 0 {
		opts = append(opts, graph.WithInterruptAfter(after...))
	}
	return opts, nil
}

// finish records how a run ended: its status, its thread's status; it returns what waiting for
// it answers.
func (h *Handler) finish(a *activeRun, tr *translator, runErr error) json.RawMessage {
	ctx := context.WithoutCancel(a.ctx)
	cause := context.Cause(a.ctx)
	result := tr.values
	var interrupted *graph.Interrupted
	switch {
	case errors.Is(cause, errShutdown):
		// Left running in the records: the next handler on the store continues it.
		return mustJSON(map[string]any{"__error__": errorJSON(cause)})
	case cause != nil:
		a.rec.Status = runInterrupted
	case runErr == nil || errors.Is(runErr, graph.ErrNothingToResume) && a.rec.Kwargs.Command == nil:
		// A run without input continues the thread, and has nothing to do when it has finished.
		a.rec.Status = runSuccess
	case errors.As(runErr, &interrupted):
		a.rec.Status = runSuccess
		result = tr.interrupted(interrupted.Interrupts, a.log.add)
	default:
		a.rec.Status = runError
		a.log.add("error", errorJSON(runErr))
		result = map[string]any{"__error__": errorJSON(runErr)}
	}
	if a.rec.Status != runError {
		tr.end(a.log.add, a.rec.RunID)
	}
	var err error
	switch {
	case errors.Is(cause, errRollback):
		err = h.rollback(ctx, a)
	case a.rec.Kwargs.Temporary:
		err = h.dropThread(ctx, a.rec.ThreadID, a.e)
	default:
		if err = h.saveRun(a); err == nil {
			err = h.settleThread(ctx, a)
		}
	}
	if err != nil {
		a.log.add("error", errorJSON(fmt.Errorf("recording the end of run %s: %w", a.rec.RunID, err)))
	}
	if result == nil { // no state went by: the thread's is the answer
		result = map[string]any{}
		if st, err := a.e.state(ctx, a.rec.ThreadID, ""); err == nil && a.rec.Status != runError {
			result = st.Values
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended = append(h.ended, a.rec.RunID)
	if len(h.ended) > keptLogs {
		delete(h.logs, h.ended[0])
		h.ended = h.ended[1:]
	}
	return mustJSON(result)
}

// saveRun stores a run's record with its status.
func (h *Handler) saveRun(a *activeRun) error {
	a.rec.UpdatedAt = time.Now().UTC()
	return h.rec.put(context.WithoutCancel(a.ctx), runKey(a.rec.ThreadID, a.rec.RunID), a.rec)
}

// settleThread sets the status of a run's thread after the run: error when it failed,
// interrupted when its graph waits for input, busy while more runs wait, idle otherwise.
func (h *Handler) settleThread(ctx context.Context, a *activeRun) error {
	status := threadIdle
	switch a.rec.Status {
	case runError:
		status = threadError
	case runSuccess:
		st, err := a.e.state(ctx, a.rec.ThreadID, "")
		if err != nil {
			return err
		}
		if len(st.Next) > 0 {
			status = threadInterrupted
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if ln := h.lanes[a.rec.ThreadID]; ln != nil && len(ln.runs) > 1 && status == threadIdle {
		status = threadBusy
	}
	t := &thread{}
	found, err := h.rec.get(ctx, threadKey(a.rec.ThreadID), t)
	if err != nil || !found {
		return err
	}
	t.Status, t.UpdatedAt = status, time.Now().UTC()
	return h.rec.put(ctx, threadKey(t.ThreadID), t)
}

// rollback undoes a run: the thread returns to the checkpoint the run started from (a fork of it
// becomes the latest) and the run's record is deleted.
func (h *Handler) rollback(ctx context.Context, a *activeRun) error {
	if err := a.e.rollback(ctx, a.rec.ThreadID, a.rec.RunID); err != nil {
		return err
	}
	var c change
	c.Delete(runKey(a.rec.ThreadID, a.rec.RunID))
	if err := h.rec.apply(ctx, &c); err != nil {
		return err
	}
	return h.settleThread(ctx, a)
}

// dropThread deletes a thread's checkpoints (when it has a graph), its runs and its record.
func (h *Handler) dropThread(ctx context.Context, threadID string, e entry) error {
	if e != nil {
		if err := e.dropThread(ctx, threadID); err != nil {
			return err
		}
	}
	docs, err := h.rec.st.Docs(ctx, runPrefix+threadID+"/")
	if err != nil {
		return err
	}
	var c change
	for _, d := range docs {
		c.Delete(d.Key)
	}
	c.Delete(threadKey(threadID))
	return h.rec.apply(ctx, &c)
}

// stopRuns cancels a thread's runs in flight with cause and waits until they have ended.
func (h *Handler) stopRuns(ctx context.Context, threadID string, cause error) error {
	h.mu.Lock()
	ln := h.lanes[threadID]
	if ln == nil {
		h.mu.Unlock()
		return nil
	}
	for _, a := range ln.runs {
		a.cancel(cause)
	}
	h.mu.Unlock()
	select {
	case <-ln.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// restart sets the alarms of the crons of registered assistants, and queues the runs a stopped
// handler left pending or running, thread by thread in the order they were created, once the
// graphs of all of a thread's runs are registered: a running one continues from its thread's
// latest checkpoint when it had written one.
func (h *Handler) restart(ctx context.Context) error {
	if err := h.armCrons(ctx); err != nil {
		return err
	}
	runs, err := list[run](ctx, h.rec, runPrefix)
	if err != nil {
		return err
	}
	runs = slices.DeleteFunc(runs, func(r run) bool { return r.Status != runPending && r.Status != runRunning })
	slices.SortStableFunc(runs, func(a, b run) int { return a.CreatedAt.Compare(b.CreatedAt) })
	byThread := map[string][]run{}
	for _, r := range runs {
		byThread[r.ThreadID] = append(byThread[r.ThreadID], r)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	graphs := map[string]entry{}
	for _, e := range h.graphs {
		graphs[assistantID(e.id())] = e
	}
	for thread, runs := range byThread {
		if h.lanes[thread] != nil || slices.ContainsFunc(runs, func(r run) bool { return graphs[r.AssistantID] == nil }) {
			continue
		}
		for _, rec := range runs {
			e := graphs[rec.AssistantID]
			cont := false
			if rec.Status == runRunning {
				var err error
				if cont, err = e.resumable(ctx, rec.ThreadID, rec.RunID); err != nil {
					return err
				}
			}
			fn, err := e.prepare(&rec.Kwargs, cont)
			if err != nil {
				return fmt.Errorf("langgraphapi: run %s of thread %s cannot continue: %w", rec.RunID, rec.ThreadID, err)
			}
			h.enqueue(rec, e, fn)
		}
	}
	return nil
}

// runRecord reads a run's record.
func (h *Handler) runRecord(ctx context.Context, threadID, runID string) (run, error) {
	var rec run
	found, err := h.rec.get(ctx, runKey(threadID, runID), &rec)
	if err == nil && !found {
		err = notFound("no run %q on thread %q", runID, threadID)
	}
	return rec, err
}

func (h *Handler) getRun(w http.ResponseWriter, r *http.Request) error {
	rec, err := h.runRecord(r.Context(), r.PathValue("thread"), r.PathValue("run"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rec)
	return nil
}

func (h *Handler) listRuns(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.thread(r.Context(), r.PathValue("thread")); err != nil {
		return err
	}
	runs, err := list[run](r.Context(), h.rec, runPrefix+r.PathValue("thread")+"/")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if s := q.Get("status"); s != "" {
		runs = slices.DeleteFunc(runs, func(r run) bool { return r.Status != s })
	}
	slices.SortStableFunc(runs, func(a, b run) int { return b.CreatedAt.Compare(a.CreatedAt) })
	limit, _ := strconv.Atoi(q.Get("limit"))
	offset, _ := strconv.Atoi(q.Get("offset"))
	writeJSON(w, http.StatusOK, page(runs, limit, offset))
	return nil
}

func (h *Handler) deleteRun(w http.ResponseWriter, r *http.Request) error {
	rec, err := h.runRecord(r.Context(), r.PathValue("thread"), r.PathValue("run"))
	if err != nil {
		return err
	}
	if rec.Status == runPending || rec.Status == runRunning {
		return conflict("run %s is in flight: cancel it first", rec.RunID)
	}
	var c change
	c.Delete(runKey(rec.ThreadID, rec.RunID))
	if err := h.rec.apply(r.Context(), &c); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// active returns the run in flight with that ID, nil when there is none.
func (h *Handler) active(threadID, runID string) *activeRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ln := h.lanes[threadID]; ln != nil {
		for _, a := range ln.runs {
			if a.rec.RunID == runID {
				return a
			}
		}
	}
	return nil
}

func (h *Handler) cancelRun(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	cause := errInterrupt
	switch q.Get("action") {
	case "", "interrupt":
	case "rollback":
		cause = errRollback
	default:
		return invalid("action: %q is neither interrupt nor rollback", q.Get("action"))
	}
	threadID, runID := r.PathValue("thread"), r.PathValue("run")
	if _, err := h.runRecord(r.Context(), threadID, runID); err != nil {
		return err
	}
	a := h.active(threadID, runID)
	if a == nil {
		w.WriteHeader(http.StatusAccepted) // it has ended already
		return nil
	}
	a.cancel(cause)
	if q.Get("wait") != "1" && q.Get("wait") != "true" {
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	for {
		_, ended, wake := a.log.since(0)
		if ended {
			break
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return r.Context().Err()
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// logOf returns a run's log; nil when the run ended before this handler started or long ago.
func (h *Handler) logOf(runID string) *runLog {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logs[runID]
}

func (h *Handler) joinRun(w http.ResponseWriter, r *http.Request) error {
	rec, err := h.runRecord(r.Context(), r.PathValue("thread"), r.PathValue("run"))
	if err != nil {
		return err
	}
	if l := h.logOf(rec.RunID); l != nil {
		l.wait(w, r, nil)
		return nil
	}
	t, err := h.thread(r.Context(), rec.ThreadID)
	if err == nil {
		t, err = h.view(r.Context(), t)
	}
	if err != nil {
		return err
	}
	values, ok := asMap(t.Values).(map[string]any)
	if !ok {
		values = map[string]any{}
	}
	var pending []interruptJSON
	for _, in := range t.Interrupts {
		pending = append(pending, in...)
	}
	if len(pending) > 0 {
		values["__interrupt__"] = pending
	}
	writeJSON(w, http.StatusOK, values)
	return nil
}

func (h *Handler) joinStream(w http.ResponseWriter, r *http.Request) error {
	threadID, runID := r.PathValue("thread"), r.PathValue("run")
	l := h.logOf(runID)
	if l == nil {
		if threadID == "" {
			return notFound("no run %q in flight", runID)
		}
		if _, err := h.runRecord(r.Context(), threadID, runID); err != nil {
			return err
		}
		l = newRunLog() // it ended: an empty stream
		l.end(nil)
	}
	from := lastEventID(r)
	if from < 0 {
		from = l.len()
	}
	var gone func()
	if v := r.URL.Query().Get("cancel_on_disconnect"); v == "1" || v == "true" {
		if a := h.active(threadID, runID); a != nil {
			gone = func() { a.cancel(errInterrupt) }
		}
	}
	l.stream(w, r, from, gone)
	return nil
}

// sortRuns puts a thread's runs in the order they were made.
func sortRuns(runs []run) {
	slices.SortStableFunc(runs, func(a, b run) int { return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.RunID, b.RunID)) })
}

// queryModes reads the stream_mode of a query: repeated, or a JSON list as the SDK sends it.
func queryModes(r *http.Request) ([]string, error) {
	var modes []string
	for _, v := range r.URL.Query()["stream_mode"] {
		var list []string
		if json.Unmarshal([]byte(v), &list) != nil {
			list = []string{v}
		}
		for _, m := range list {
			if !streamModes[m] {
				return nil, invalid("stream_mode: no mode %q", m)
			}
		}
		modes = append(modes, list...)
	}
	return modes, nil
}

// threadStream streams the runs of a thread, one after the other as they run, until the client
// goes away: from the next event of the run in flight when it is asked (or after the event the
// Last-Event-ID names, "<run>:<n>", while the handler keeps that run's events), and whole the
// runs after. stream_mode leaves out the events of other modes.
func (h *Handler) threadStream(w http.ResponseWriter, r *http.Request) error {
	t, err := h.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	modes, err := queryModes(r)
	if err != nil {
		return err
	}
	var keep func(string) bool
	if len(modes) > 0 {
		keep = func(name string) bool {
			mode, _, _ := strings.Cut(name, "|")
			mode, _, _ = strings.Cut(mode, "/")
			return slices.Contains(modes, mode) || mode == "messages" && slices.Contains(modes, "messages-tuple") ||
				mode == "metadata" || mode == "error"
		}
	}
	// The thread's runs ended before the client came are left out; the one in flight streams
	// from its next event, those after whole. After a Last-Event-ID, the stream goes on from
	// that event: the rest of its run, then the runs after it whole, ended or not.
	ctx := r.Context()
	runs, err := list[run](ctx, h.rec, runPrefix+t.ThreadID+"/")
	if err != nil {
		return err
	}
	sortRuns(runs)
	seen := map[string]bool{} // the runs streamed or left out
	from := map[string]int{}  // where to start a run's events, when not at its first
	last, n, resumed := strings.Cut(r.Header.Get("Last-Event-ID"), ":")
	after := false // past the run the Last-Event-ID names
	for _, rec := range runs {
		switch l := h.logOf(rec.RunID); {
		case resumed && rec.RunID == last:
			from[last], _ = strconv.Atoi(n)
			resumed, after = false, true
		case resumed, l == nil:
			seen[rec.RunID] = true
		case after: // streamed whole
		case rec.Status == runRunning:
			from[rec.RunID] = l.len()
		case rec.Status != runPending:
			seen[rec.RunID] = true
		}
	}
	startStream(w)
	for {
		h.mu.Lock()
		queued := h.queued
		h.mu.Unlock()
		runs, err := list[run](ctx, h.rec, runPrefix+t.ThreadID+"/")
		if err != nil {
			return nil // the answer has begun: the stream ends
		}
		sortRuns(runs)
		i := slices.IndexFunc(runs, func(rec run) bool { return !seen[rec.RunID] })
		if i < 0 {
			select {
			case <-queued:
				continue
			case <-ctx.Done():
				return nil
			}
		}
		id := runs[i].RunID
		seen[id] = true
		l := h.logOf(id)
		if l == nil {
			continue
		}
		if !l.pump(w, r, from[id], func(n int) string { return id + ":" + strconv.Itoa(n) }, keep) {
			return nil
		}
	}
}
