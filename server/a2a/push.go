package a2a

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agiraph/agiraph/internal/a2awire"
	"github.com/agiraph/agiraph/internal/webhook"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// pushConfig is a push notification config, with the version of A2A its notifications speak
// (the version of the call that set it; "" is 0.3).
type pushConfig struct {
	PushConfig
	Version a2awire.Version `json:"version,omitempty"`
}

// records are the records of a host's tasks that a server kept before in files under its root,
// <root>/a2a/<agent>/<task>.json: read, never written.
type records struct{ dir string }

func (r *records) file(agent, task string) string {
	return filepath.Join(r.dir, "a2a", agent, task+".json")
}

// read returns the record of task (an empty one when there is none).
func (r *records) read(agent, task string) record {
	var rec record
	_ = workspace.ReadJSON(r.file(agent, task), &rec)
	return rec
}

// tasks returns the tasks of agent that have a record.
func (r *records) tasks(agent string) []string {
	files, _ := filepath.Glob(r.file(agent, "*"))
	var out []string
	for _, f := range files {
		out = append(out, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	return out
}

// agents returns the agents that have records.
func (r *records) agents() []string {
	entries, _ := os.ReadDir(filepath.Join(r.dir, "a2a"))
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// setPush is tasks/pushNotificationConfig/set.
func (c *call) setPush(raw json.RawMessage) (any, error) {
	var p TaskPushConfig
	if err := c.params(raw, &p); err != nil {
		return nil, err
	}
	if _, _, _, err := c.a.status(p.TaskID); err != nil {
		return nil, err
	}
	return c.setPushOf(p.TaskID, p.Config)
}

// setPushOf sets a push notification config of task, and sends its notifications from then on.
func (c *call) setPushOf(task string, cfg PushConfig) (TaskPushConfig, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return TaskPushConfig{}, invalid("push notification url %q: want an absolute http or https URL", cfg.URL)
	}
	if why := webhook.CheckHost(u); why != "" && !c.h.privatePush {
		return TaskPushConfig{}, invalid("push notification url %q: %s, where this server sends no notification", cfg.URL, why)
	}
	if cfg.ID == "" {
		cfg.ID = task
	}
	err = c.a.update(task, func(rec *record) bool {
		rec.Push = slices.DeleteFunc(rec.Push, func(p pushConfig) bool { return p.ID == cfg.ID })
		rec.Push = append(rec.Push, pushConfig{PushConfig: cfg, Version: c.v})
		return true
	})
	if err != nil {
		return TaskPushConfig{}, err
	}
	c.notify(task)
	return TaskPushConfig{TaskID: task, Config: cfg}, nil
}

// pushConfigs returns the push notification configs of the task of params raw.
func (c *call) pushConfigs(raw json.RawMessage) (a2awire.TaskParams, []pushConfig, error) {
	var p a2awire.TaskParams
	if err := c.params(raw, &p); err != nil {
		return p, nil, err
	}
	if _, _, _, err := c.a.status(p.ID); err != nil {
		return p, nil, err
	}
	return p, c.a.record(p.ID).Push, nil
}

// getPush is tasks/pushNotificationConfig/get: the config named, or the task's first.
func (c *call) getPush(raw json.RawMessage) (any, error) {
	p, cfgs, err := c.pushConfigs(raw)
	if err != nil {
		return nil, err
	}
	for _, cfg := range cfgs {
		if p.PushID == "" || cfg.ID == p.PushID {
			return TaskPushConfig{TaskID: p.ID, Config: cfg.PushConfig}, nil
		}
	}
	return nil, invalid("task %q has no push notification config %q", p.ID, p.PushID)
}

// listPush is tasks/pushNotificationConfig/list.
func (c *call) listPush(raw json.RawMessage) (any, error) {
	p, cfgs, err := c.pushConfigs(raw)
	if err != nil {
		return nil, err
	}
	out := []TaskPushConfig{}
	for _, cfg := range cfgs {
		out = append(out, TaskPushConfig{TaskID: p.ID, Config: cfg.PushConfig})
	}
	return out, nil
}

// deletePush is tasks/pushNotificationConfig/delete.
func (c *call) deletePush(raw json.RawMessage) (any, error) {
	p, _, err := c.pushConfigs(raw)
	if err != nil {
		return nil, err
	}
	if p.PushID == "" {
		return nil, invalid("pushNotificationConfigId: give the id of the config to delete")
	}
	return nil, c.a.update(p.ID, func(rec *record) bool {
		n := len(rec.Push)
		rec.Push = slices.DeleteFunc(rec.Push, func(cfg pushConfig) bool { return cfg.ID == p.PushID })
		return len(rec.Push) != n
	})
}

// notify follows task, unless it is followed already, and posts it to its push notification
// URLs each time its state changes, until it ends, the host closes or the handler does. A post
// is made in the background, the latest state only when several came while one was on its
// way: a slow or failing URL delays nothing else.
func (c *call) notify(task string) {
	h, key := c.h, c.a.ID()+"/"+task
	h.mu.Lock()
	if h.watching[key] {
		h.mu.Unlock()
		return
	}
	h.watching[key] = true
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		defer func() {
			h.mu.Lock()
			delete(h.watching, key)
			h.mu.Unlock()
		}()
		changed := make(chan struct{}, 1)
		posted := make(chan struct{})
		go func() {
			defer close(posted)
			for range changed {
				c.post(task)
			}
		}()
		defer func() { close(changed); <-posted }()
		state, _, _, err := c.a.status(task)
		for err == nil && !a2awire.Terminal(state) && state != StateUnknown {
			var after int64
			if after, err = c.a.cursor(task); err != nil {
				return
			}
			more := c.a.watch(h.ctx, task, after, state, func(u any) bool {
				if su, ok := u.(StatusUpdate); ok && su.Status.State != state {
					state = su.Status.State
					select {
					case changed <- struct{}{}:
					default:
					}
				}
				return true
			})
			if !more {
				return
			}
		}
	}()
}

// resume follows again, in the background, the tasks whose push notifications were being sent
// when the backend last stopped.
func (h *Handler) resume() {
	h.wg.Add(1)
	go func() { // the agents are read as they are set up
		defer h.wg.Done()
		for id, tasks := range h.backend.pending(h.ctx) {
			a, err := h.backend.agent(h.ctx, id)
			if err != nil {
				continue
			}
			for _, task := range tasks {
				(&call{h: h, a: a}).notify(task)
			}
		}
	}()
}

// post posts task as it is now to each of its push notification URLs, in the version of A2A
// of each.
func (c *call) post(task string) {
	t, err := taskNow(c.a, task, nil)
	if err != nil {
		return
	}
	for _, cfg := range c.a.record(task).Push {
		body, err := json.Marshal(cfg.Version.Event(t))
		if err != nil {
			return
		}
		c.h.deliver(cfg.PushConfig, body, c.a.ID(), task)
	}
}

// deliver posts body to cfg's URL, with its token and credentials, a few times until it is
// taken (webhook.Post); a failure is logged.
func (h *Handler) deliver(cfg PushConfig, body []byte, agent, task string) {
	header := http.Header{}
	if cfg.Token != "" {
		header.Set("X-A2A-Notification-Token", cfg.Token)
	}
	if a := cfg.Authentication; a != nil && a.Credentials != "" {
		for _, s := range a.Schemes {
			if strings.EqualFold(s, "bearer") {
				header.Set("Authorization", "Bearer "+a.Credentials)
			}
		}
	}
	if err := webhook.Post(h.ctx, h.client, cfg.URL, header, body); err != nil && h.ctx.Err() == nil {
		h.log.Warn("a2a: a push notification could not be delivered", "agent", agent, "task", task, "url", cfg.URL, "err", err)
	}
}
