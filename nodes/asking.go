package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/agiraph/agiraph/hooks"
	"github.com/agiraph/agiraph/internal/webhook"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
)

// WithAnswerTimeout bounds how long a question to the human waits: a worker's, or the
// coordinator's, that has no answer d after it was asked is answered by the squad with the
// default its asker gave (ask_human's default, for a harnessed worker or the coordinator), or
// "no answer within d", and the work goes on. A tool call held for approval (WithHooks) waits for its verdict. The deadline is kept with the question, so a run resumed after a
// restart keeps it. By default a question waits for as long as it takes.
func WithAnswerTimeout(d time.Duration) Option { return func(c *config) { c.answerTimeout = d } }

// Webhook is where a squad posts its questions to the human, beside its inbox (see WithWebhook).
type Webhook struct {
	// URL is posted a [Question] as JSON for each question asked.
	URL string
	// Agent names the agent in what is posted: the id the server's API knows it by.
	Agent string
	// AllowPrivate lets URL be on a loopback, private or link-local address, which are refused
	// by default.
	AllowPrivate bool
	// Header is sent with each post (an authorization, say).
	Header http.Header
}

// Question is what a squad posts to its webhook when a worker, or the coordinator, asks the
// human something. The answer comes back as any answer does (Run.Answer; the server's POST
// /agents/{id}/respond with Worker).
type Question struct {
	Type     string `json:"type"` // "human.question"
	Agent    string `json:"agent,omitempty"`
	Run      string `json:"run"`
	Node     string `json:"node,omitempty"`
	Worker   string `json:"worker"` // who asked: a worker's id, or "coordinator"
	Question string `json:"question"`
	// Approval is the tool call the question asks the human to approve, when it is one (see
	// WithHooks): the answer is then a verdict.
	Approval *hooks.Approval `json:"approval,omitempty"`
	// Key names the question uniquely in the run: a post made again after a crash has the same.
	Key string `json:"key"`
	// AnswerBy is when the question ends without an answer (WithAnswerTimeout), if it does; a
	// tool call waiting for approval has no deadline. Default is the answer it then takes, when
	// its asker gave one.
	AnswerBy *time.Time `json:"answer_by,omitempty"`
	Default  string     `json:"default,omitempty"`
}

// WithWebhook posts each question to the human to a webhook too: a few tries in the background,
// which never hold the run up; a failure is logged and is an x.error event. New fails on a URL
// that is not an absolute http or https one.
func WithWebhook(w Webhook) Option { return func(c *config) { c.webhook = w } }

// webhooks delivers a squad's questions to its webhook.
type webhooks struct {
	cfg    Webhook
	client *http.Client
	ctx    context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

// Check checks that w's URL is an absolute http or https one, and, unless AllowPrivate, that
// its host is no loopback, private or link-local address as far as the URL shows (the address a
// name resolves to is checked as each question is posted).
func (w Webhook) Check() error {
	if err := webhook.CheckURL(w.URL); err != nil {
		return err
	}
	u, _ := url.Parse(w.URL)
	if why := webhook.CheckHost(u); why != "" && !w.AllowPrivate {
		return fmt.Errorf("webhook: url %q: %s (Webhook.AllowPrivate allows it)", w.URL, why)
	}
	return nil
}

func newWebhooks(w Webhook) (*webhooks, error) {
	if err := w.Check(); err != nil {
		return nil, fmt.Errorf("nodes: WithWebhook: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	return &webhooks{cfg: w, client: webhook.Client(w.AllowPrivate), ctx: ctx, stop: stop}, nil
}

// close stops the deliveries under way and waits for them.
func (h *webhooks) close() {
	h.stop()
	h.wg.Wait()
}

// answerBy returns when a question asked now ends without an answer; zero when it does not.
func (r *run) answerBy() time.Time {
	if r.cfg.answerTimeout <= 0 {
		return time.Time{}
	}
	return r.cfg.now().Add(r.cfg.answerTimeout).UTC()
}

// asked posts q, a question asked in the run (its Key the run's), to the squad's webhook, if it
// has one; by is when it ends without an answer (zero: never).
func (r *run) asked(q Question, by time.Time) {
	h := r.s.hooks
	if h == nil {
		return
	}
	q.Type, q.Agent, q.Run, q.Key = string(eventlog.HumanQuestion), h.cfg.Agent, r.id, r.id+"/"+q.Key
	if !by.IsZero() {
		q.AnswerBy = &by
	}
	body, err := json.Marshal(q)
	if err != nil {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		if err := webhook.Post(h.ctx, h.client, h.cfg.URL, h.cfg.Header, body); err != nil && h.ctx.Err() == nil {
			r.s.cfg.logger.Warn("a question could not be posted to the webhook", "run", r.id, "key", q.Key, "err", err)
			r.emit(context.Background(), eventlog.New(eventlog.Error, fmt.Sprintf("the question %s was not posted to the webhook: %v", q.Key, err), nil))
		}
	}()
}

// expireQuestions answers the questions whose time is up (WithAnswerTimeout) with the default
// their asker gave, or "no answer within" the timeout; not while the human has the workers stopped, which an answer would undo.
func (r *run) expireQuestions() {
	if r.cfg.answerTimeout <= 0 || r.isStopped() {
		return
	}
	now := r.cfg.now()
	due := map[string]string{} // who asked → its default
	if st := r.board.runState(); st.Question != "" && !st.AnswerBy.IsZero() && !now.Before(st.AnswerBy) {
		due[bus.Coordinator] = st.Default
	}
	r.board.read(func(rd reader) {
		for _, n := range rd.nodes() {
			if n.Status == NodeWaiting && n.Question != "" && n.Answer == "" && !n.AnswerBy.IsZero() && !now.Before(n.AnswerBy) {
				due[n.Worker] = n.Default
			}
		}
	})
	for who, answer := range due {
		if answer == "" {
			answer = "no answer within " + r.cfg.answerTimeout.String()
		}
		err := r.answer(who, answer)
		if err != nil && !errors.Is(err, ErrNoQuestion) {
			r.emit(context.Background(), eventlog.New(eventlog.Error, fmt.Sprintf("the question of %s could not be ended: %v", who, err), nil))
		}
	}
}
