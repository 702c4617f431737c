package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/providers"
)

// Budget bounds what a run spends on models: in US dollars, at the prices package providers
// knows (a model whose price it does not know spends no dollars), and in tokens, which always
// count (input, output, and prompt-cache reads and writes). A zero limit is no limit.
//
// When the run's spending reaches the Soft fraction of a limit, the coordinator is told, once
// for each value of the limit, so that it can re-plan with what is left. When it reaches a
// limit, the run pauses before its next model call — its workers stop, keeping their
// progress, as Pause stops them — and Wait returns a *BudgetError naming the limit and what was
// spent. SetBudget raises the limit; Resume takes the run up again.
//
// What a run spent is part of its checkpointed state, committed with the step that spent it, so
// it survives a restart. A worker's spending counts when its assignment ends, and the
// coordinator's when its turn ends: a run goes past a limit by what those in progress spend.
//
// Work nodes and workers can have budgets of their own (create_work_node's and spawn_worker's
// budget, set_budget): what a node's assignments spent is counted, on the node and on its
// worker, as each ends; the coordinator is told when a soft or a hard limit is reached, and a
// node or a worker past its limit gets no work until its budget is raised.
type Budget struct {
	USD    float64 `json:"usd,omitempty" jsonschema_description:"Limit in US dollars (0: none)"`
	Tokens int     `json:"tokens,omitempty" jsonschema_description:"Limit in tokens, input and output (0: none)"`
	// Soft is the fraction of a limit at which the coordinator is told (0: 0.8).
	Soft float64 `json:"soft,omitempty" jsonschema_description:"Fraction of a limit at which you are told (default 0.8)"`
}

// Check returns why b cannot be a budget (a negative limit, a Soft fraction not below 1), or nil.
func (b Budget) Check() error {
	if b.USD < 0 || b.Tokens < 0 || b.Soft < 0 || b.Soft >= 1 {
		return fmt.Errorf("nodes: budget %+v: limits must not be negative, and Soft must be a fraction below 1", b)
	}
	return nil
}

func (b Budget) soft() float64 {
	if b.Soft == 0 {
		return 0.8
	}
	return b.Soft
}

// reached describes the limits of b that spent has reached, when they are scaled by frac
// ("1200 tokens of 1000", "$0.52 of $0.50"); "" when none.
func (b Budget) reached(spent providers.Usage, frac float64) string {
	var over []string
	if n := tokens(spent); b.Tokens > 0 && float64(n) >= frac*float64(b.Tokens) {
		over = append(over, fmt.Sprintf("%d tokens of %d", n, b.Tokens))
	}
	if b.USD > 0 && spent.CostUSD >= frac*b.USD {
		over = append(over, fmt.Sprintf("$%.4f of $%.4f", spent.CostUSD, b.USD))
	}
	return strings.Join(over, ", ")
}

// Spend is what an assignment had spent when its outcome was last applied.
type Spend struct {
	Assignment string          `json:"assignment"`
	Usage      providers.Usage `json:"usage"`
}

// newSpend returns what assignment id spent beyond what n counted of it, given u, the total its
// outcome reports.
func (n *Node) newSpend(id string, u providers.Usage) providers.Usage {
	if n.Counted.Assignment == id {
		return usageSince(u, n.Counted.Usage)
	}
	return u
}

// overBudget describes the limits of its budget n has reached; "" when none.
func (n *Node) overBudget() string { return n.Budget.reached(n.Spent, 1) }

// overBudget describes the limits of its budget w has reached; "" when none.
func (w *Worker) overBudget() string { return w.Budget.reached(w.Spent, 1) }

// budgetNote is what the coordinator is told of who (a node or a worker), with budget b, that
// has spent spent: that it reached a limit, or passed a soft one; "" when neither.
func budgetNote(who string, b Budget, spent providers.Usage) string {
	if b == (Budget{}) {
		return ""
	}
	if over := b.reached(spent, 1); over != "" {
		return fmt.Sprintf("%s reached its budget: it spent %s, and gets no more work until you raise its budget with set_budget.", who, over)
	}
	if soft := b.reached(spent, b.soft()); soft != "" {
		return fmt.Sprintf("%s has spent %s of its budget; at the limit it stops.", who, soft)
	}
	return ""
}

// toolSetBudget sets the budget of a work node or of a worker.
func (r *run) toolSetBudget(ctx context.Context, args setBudgetArgs) (string, error) {
	if err := args.Budget.Check(); err != nil {
		return "", err
	}
	var who, over string
	var spent providers.Usage
	switch {
	case (args.Node == "") == (args.Worker == ""):
		return "", errors.New("name a node or a worker, not both")
	case args.Node != "":
		n, err := r.board.update(ctx, args.Node, func(n *Node) error {
			n.Budget = args.Budget
			return nil
		})
		if err != nil {
			return "", err
		}
		who, over, spent = "Node "+n.ID, n.overBudget(), n.Spent
	default:
		w, err := r.board.updateWorker(ctx, args.Worker, func(w *Worker) { w.Budget = args.Budget })
		if err != nil {
			return "", err
		}
		who, over, spent = "Worker "+w.Name, w.overBudget(), w.Spent
	}
	if over != "" {
		return fmt.Sprintf("%s's budget is set; it is still reached (%s).", who, over), nil
	}
	return fmt.Sprintf("%s's budget is set; it has spent %d tokens ($%.4f).", who, tokens(spent), spent.CostUSD), nil
}

// tokens counts every token of u.
func tokens(u providers.Usage) int {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// ErrOverBudget is matched (errors.Is) by the *BudgetError a run paused by its budget ends with.
var ErrOverBudget = errors.New("nodes: over budget")

// BudgetError is how a run that reached a limit of its budget ends: paused, resumable once the
// limit is raised (see Budget).
type BudgetError struct {
	Run    string
	Budget Budget
	Spent  providers.Usage
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("nodes: run %s paused over its budget: spent %s; raise the budget (SetBudget) and resume it",
		e.Run, e.Budget.reached(e.Spent, 1))
}

// Is matches ErrOverBudget.
func (e *BudgetError) Is(target error) bool { return target == ErrOverBudget }

// WithBudget sets the budget of every run that SetBudget has not given one of its own.
func WithBudget(b Budget) Option { return func(c *config) { c.budget = b } }

// budgetKey is the store's key of the budget SetBudget gave run id.
func budgetKey(id string) string { return "budget/" + id }

// SetBudget sets the budget of run id, in place of WithBudget's, whether or not the run is in
// progress: raised past what the run spent, it lets a run its budget paused be resumed. The
// budget is kept in the squad's store, across restarts.
func (s *Squad) SetBudget(ctx context.Context, id string, b Budget) error {
	if err := b.Check(); err != nil {
		return err
	}
	rs, _, err := readRunState(ctx, s.store, s.home.Run(id))
	if err != nil {
		return err
	}
	if rs.Goal == "" {
		return fmt.Errorf("nodes: set the budget of run %q: there is no such run", id)
	}
	var ch store.Change
	if err := ch.Put(budgetKey(id), b); err != nil {
		return err
	}
	s.budgetsMu.Lock()
	defer s.budgetsMu.Unlock()
	if err := s.store.Apply(ctx, ch); err != nil {
		return err
	}
	s.budgets[id] = &b
	return nil
}

// BudgetOf returns the budget of run id: SetBudget's, or else WithBudget's.
// The store is read once a run.
func (s *Squad) BudgetOf(ctx context.Context, id string) (Budget, error) {
	s.budgetsMu.Lock()
	defer s.budgetsMu.Unlock()
	b, ok := s.budgets[id]
	if !ok {
		d, err := s.store.Doc(ctx, budgetKey(id))
		if err != nil {
			return Budget{}, err
		}
		if d.Value != nil {
			b = new(Budget)
			if err := json.Unmarshal(d.Value, b); err != nil {
				return Budget{}, fmt.Errorf("nodes: run %s: its budget in the store is damaged: %w", id, err)
			}
		}
		s.budgets[id] = b
	}
	if b == nil {
		return s.cfg.budget, nil
	}
	return *b, nil
}

// checkBudget holds the run to its budget, given what it spent: past a soft limit it tells the
// coordinator (once per limit); at a limit it pauses the run, ending its context with a
// *BudgetError, which it returns.
func (r *run) checkBudget(ctx context.Context, spent providers.Usage) error {
	b, err := r.s.BudgetOf(ctx, r.id)
	if err != nil || (b.USD == 0 && b.Tokens == 0) {
		return err
	}
	if hard := b.reached(spent, 1); hard != "" {
		be := &BudgetError{Run: r.id, Budget: b, Spent: spent}
		r.cancel(be)
		return be
	}
	soft := b.reached(spent, b.soft())
	if soft == "" {
		return nil
	}
	key := fmt.Sprintf("budget/soft/%g/%d", b.USD, b.Tokens)
	text := fmt.Sprintf("Budget: the run has spent %s of its limit. At the limit it pauses until a person raises it: plan with what is left — fewer or cheaper workers, smaller steps, or finish with what you have.", soft)
	if _, err := r.bus.SendOnce(ctx, key, squadName, bus.Coordinator, text); err != nil {
		return err
	}
	r.emitAt(ctx, eventlog.Budget, "", "", "soft limit reached: "+soft, spent, key)
	return nil
}
