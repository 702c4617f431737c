package langgraphapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/agiraph/agiraph/nodes/triggers"
)

const cronPrefix = "langgraph/cron/"

func cronKey(id string) string { return cronPrefix + id }

// cronJob is a cron: a run made on schedule, on its thread or (without one) on a thread of its
// own each time.
type cronJob struct {
	CronID         string         `json:"cron_id"`
	AssistantID    string         `json:"assistant_id"`
	ThreadID       *string        `json:"thread_id"`
	OnRunCompleted string         `json:"on_run_completed,omitempty"`
	EndTime        *time.Time     `json:"end_time"`
	Schedule       string         `json:"schedule"`
	CreatedAt      time.Time      `json:"created_at"`
	UpdatedAt      time.Time      `json:"updated_at"`
	Payload        runCreate      `json:"payload"`
	UserID         *string        `json:"user_id"`
	NextRunDate    *time.Time     `json:"next_run_date"`
	Metadata       map[string]any `json:"metadata"`
	Enabled        bool           `json:"enabled"`
}

// cronRequest is the body that creates or updates a cron: the run's request and the schedule's.
type cronRequest struct {
	runCreate
	Schedule       *string    `json:"schedule"`
	EndTime        *time.Time `json:"end_time"`
	OnRunCompleted *string    `json:"on_run_completed"`
	Enabled        *bool      `json:"enabled"`
}

// parseSchedule reads a cron's schedule, in UTC unless it starts with TZ=.
func parseSchedule(expr string) (cron.Schedule, error) {
	s, err := triggers.ParseCron(expr, "")
	var fe *triggers.FieldError
	if errors.As(err, &fe) {
		return nil, invalid("schedule: %s", fe.Problem)
	}
	return s, err
}

// checkCron checks a cron's run request (naming its assistant by ID) and schedule, and sets when
// it runs next.
func (h *Handler) checkCron(ctx context.Context, c *cronJob) error {
	if _, err := c.Payload.kwargs(); err != nil {
		return err
	}
	if c.Payload.AssistantID == "" {
		return invalid("assistant_id: missing")
	}
	a, _, err := h.assistant(ctx, c.Payload.AssistantID)
	if err != nil {
		return err
	}
	c.AssistantID, c.Payload.AssistantID = a.AssistantID, a.AssistantID
	if c.OnRunCompleted != "" && c.OnRunCompleted != "delete" && c.OnRunCompleted != "keep" {
		return invalid("on_run_completed: give \"delete\" or \"keep\", not %q", c.OnRunCompleted)
	}
	return h.schedule(c)
}

// schedule sets when a cron runs next: none after its end time.
func (h *Handler) schedule(c *cronJob) error {
	s, err := parseSchedule(c.Schedule)
	if err != nil {
		return err
	}
	c.NextRunDate = nil
	if next := s.Next(h.clock.Now()).UTC(); c.EndTime == nil || !next.After(*c.EndTime) {
		c.NextRunDate = &next
	}
	return nil
}

// saveCron stores a cron and sets its alarm.
func (h *Handler) saveCron(ctx context.Context, c *cronJob) error {
	c.UpdatedAt = h.clock.Now().UTC()
	if err := h.rec.put(ctx, cronKey(c.CronID), c); err != nil {
		return err
	}
	h.arm(c)
	return nil
}

// arm sets the alarm of a cron to its next run, or clears it.
func (h *Handler) arm(c *cronJob) {
	var at time.Time
	if c.Enabled && c.NextRunDate != nil {
		at = *c.NextRunDate
	}
	h.alarm.Set(c.CronID, at)
}

func (h *Handler) createCron(w http.ResponseWriter, r *http.Request) error {
	var q cronRequest
	if err := readJSON(r, &q); err != nil {
		return err
	}
	if q.Schedule == nil {
		return invalid("schedule: missing")
	}
	now := h.clock.Now().UTC()
	c := cronJob{
		CronID: newID(), AssistantID: q.AssistantID, Schedule: *q.Schedule, EndTime: q.EndTime,
		CreatedAt: now, Payload: q.runCreate, Metadata: orEmpty(q.Metadata), Enabled: q.Enabled == nil || *q.Enabled,
	}
	if id := r.PathValue("thread"); id != "" {
		if _, err := h.thread(r.Context(), id); err != nil {
			return err
		}
		c.ThreadID = &id
	} else {
		c.OnRunCompleted = "delete"
		if q.OnRunCompleted != nil {
			c.OnRunCompleted = *q.OnRunCompleted
		}
	}
	return h.answerCron(w, r, &c)
}

// answerCron checks a cron made or changed by a request, stores it and answers it.
func (h *Handler) answerCron(w http.ResponseWriter, r *http.Request, c *cronJob) error {
	if err := h.checkCron(r.Context(), c); err != nil {
		return err
	}
	if err := h.saveCron(r.Context(), c); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}

// cron reads a cron's record.
func (h *Handler) cron(ctx context.Context, id string) (cronJob, error) {
	var c cronJob
	found, err := h.rec.get(ctx, cronKey(id), &c)
	if err == nil && !found {
		err = notFound("no cron %q", id)
	}
	return c, err
}

// updateCron changes what the request gives of a cron: its schedule, end, whether it is enabled,
// and the fields of its run's request.
func (h *Handler) updateCron(w http.ResponseWriter, r *http.Request) error {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	c, err := h.cron(r.Context(), r.PathValue("cron"))
	if err != nil {
		return err
	}
	q := cronRequest{runCreate: c.Payload}
	if err := readJSON(r, &q); err != nil {
		return err
	}
	c.Payload = q.runCreate
	if q.Schedule != nil {
		c.Schedule = *q.Schedule
	}
	if q.EndTime != nil {
		c.EndTime = q.EndTime
	}
	if q.OnRunCompleted != nil && c.ThreadID == nil {
		c.OnRunCompleted = *q.OnRunCompleted
	}
	if q.Enabled != nil {
		c.Enabled = *q.Enabled
	}
	if q.Metadata != nil {
		c.Metadata = q.Metadata
	}
	return h.answerCron(w, r, &c)
}

func (h *Handler) deleteCron(w http.ResponseWriter, r *http.Request) error {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	c, err := h.cron(r.Context(), r.PathValue("cron"))
	if err != nil {
		return err
	}
	var ch change
	ch.Delete(cronKey(c.CronID))
	if err := h.rec.apply(r.Context(), &ch); err != nil {
		return err
	}
	h.alarm.Set(c.CronID, time.Time{})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// crons reads the crons a search or count selects, the newest first.
func (h *Handler) crons(r *http.Request) ([]cronJob, int, int, error) {
	var q struct {
		AssistantID string `json:"assistant_id"`
		ThreadID    string `json:"thread_id"`
		Enabled     *bool  `json:"enabled"`
		Limit       int    `json:"limit"`
		Offset      int    `json:"offset"`
	}
	if err := readJSON(r, &q); err != nil {
		return nil, 0, 0, err
	}
	if q.AssistantID != "" {
		a, _, err := h.assistant(r.Context(), q.AssistantID)
		if err != nil {
			return nil, 0, 0, err
		}
		q.AssistantID = a.AssistantID
	}
	all, err := list[cronJob](r.Context(), h.rec, cronPrefix)
	if err != nil {
		return nil, 0, 0, err
	}
	all = slices.DeleteFunc(all, func(c cronJob) bool {
		return q.AssistantID != "" && c.AssistantID != q.AssistantID ||
			q.ThreadID != "" && (c.ThreadID == nil || *c.ThreadID != q.ThreadID) ||
			q.Enabled != nil && c.Enabled != *q.Enabled
	})
	slices.SortStableFunc(all, func(a, b cronJob) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return all, q.Limit, q.Offset, nil
}

func (h *Handler) searchCrons(w http.ResponseWriter, r *http.Request) error {
	all, limit, offset, err := h.crons(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, page(all, limit, offset))
	return nil
}

func (h *Handler) countCrons(w http.ResponseWriter, r *http.Request) error {
	all, _, _, err := h.crons(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, len(all))
	return nil
}

// fire makes the run of a cron that came due, and sets its alarm to the next. A run the thread
// refuses (busy under reject), or whose assistant is gone, is skipped: the cron runs next time.
func (h *Handler) fire(id string) {
	ctx := h.ctx
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	c, err := h.cron(ctx, id)
	if err != nil || !c.Enabled || ctx.Err() != nil {
		return
	}
	q := c.Payload
	thread := ""
	if c.ThreadID != nil {
		thread = *c.ThreadID
	} else {
		q.OnCompletion = c.OnRunCompleted
	}
	_, _, _ = h.startRun(ctx, thread, &q)
	if h.schedule(&c) == nil {
		_ = h.saveCron(ctx, &c)
	}
}

// armCrons sets the alarms of the stored crons whose assistants are served (those that came due
// while no handler ran fire at once).
func (h *Handler) armCrons(ctx context.Context) error {
	all, err := list[cronJob](ctx, h.rec, cronPrefix)
	for i := range all {
		if _, _, err := h.assistant(ctx, all[i].AssistantID); err == nil {
			h.arm(&all[i])
		}
	}
	return err
}
