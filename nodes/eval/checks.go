package eval

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
)

// Check scores a run. Func checks pass or fail (score 1 or 0); a judge's check scores between
// 0 and 1 and passes from its minimum.
type Check struct {
	Name string
	// Optional checks are reported, but their failure does not fail Run's test.
	Optional bool
	// Score scores the run: its value from 0 to 1, whether it passes, and why.
	Score func(ctx context.Context, r *Outcome) (value float64, pass bool, reason string)
}

// score scores r with the check.
func (c Check) score(ctx context.Context, r *Outcome) Score {
	v, pass, reason := c.Score(ctx, r)
	return Score{Check: c.Name, Optional: c.Optional, Pass: pass, Value: v, Reason: reason}
}

// Func is a check named name that passes when fn returns nil, and fails with fn's error as
// its reason otherwise.
func Func(name string, fn func(r *Outcome) error) Check {
	return Check{Name: name, Score: func(_ context.Context, r *Outcome) (float64, bool, string) {
		if err := fn(r); err != nil {
			return 0, false, err.Error()
		}
		return 1, true, ""
	}}
}

// Finished checks that the coordinator finished the run and that every node completed.
func Finished() Check {
	return Func("finished", func(r *Outcome) error {
		if !r.Result.Finished {
			return fmt.Errorf("the run did not finish")
		}
		for _, n := range r.Result.Board.Nodes {
			if n.Status != nodes.NodeCompleted {
				return fmt.Errorf("node %s is %s", n.ID, n.Status)
			}
		}
		return nil
	})
}

// Nodes checks that the board has from min to max nodes.
func Nodes(min, max int) Check {
	return Func(fmt.Sprintf("nodes %d-%d", min, max), func(r *Outcome) error {
		if n := len(r.Result.Board.Nodes); n < min || n > max {
			return fmt.Errorf("the board has %d nodes", n)
		}
		return nil
	})
}

// Published checks that a node published the file name, containing text.
func Published(name, text string) Check {
	return Func(fmt.Sprintf("published %s", name), func(r *Outcome) error {
		got, ok := r.Published(name)
		switch {
		case !ok:
			return fmt.Errorf("no node published %s", name)
		case !strings.Contains(got, text):
			return fmt.Errorf("%s does not contain %q", name, text)
		}
		return nil
	})
}

// OutputContains checks that the run's output contains text.
func OutputContains(text string) Check {
	return Func(fmt.Sprintf("output contains %q", text), func(r *Outcome) error {
		if !strings.Contains(r.Result.Output, text) {
			return fmt.Errorf("the output %q does not contain %q", r.Result.Output, text)
		}
		return nil
	})
}

// OutputMatches checks that the run's output matches the regular expression expr; it panics
// when expr is not one.
func OutputMatches(expr string) Check {
	re := regexp.MustCompile(expr)
	return Func(fmt.Sprintf("output matches %s", expr), func(r *Outcome) error {
		if !re.MatchString(r.Result.Output) {
			return fmt.Errorf("the output %q does not match", r.Result.Output)
		}
		return nil
	})
}

// TokensUnder checks that the run's models took fewer than n tokens, input and output.
func TokensUnder(n int) Check {
	return Func(fmt.Sprintf("tokens < %d", n), func(r *Outcome) error {
		if got := r.Result.Usage.InputTokens + r.Result.Usage.OutputTokens; got >= n {
			return fmt.Errorf("the run took %d tokens", got)
		}
		return nil
	})
}

// CostUnder checks that the run cost less than usd dollars.
func CostUnder(usd float64) Check {
	return Func(fmt.Sprintf("cost < $%g", usd), func(r *Outcome) error {
		if got := r.Result.Usage.CostUSD; got >= usd {
			return fmt.Errorf("the run cost $%.4f", got)
		}
		return nil
	})
}

// Questions checks that the run put from min to max questions to the human.
func Questions(min, max int) Check {
	return Func(fmt.Sprintf("questions %d-%d", min, max), func(r *Outcome) error {
		if n := len(r.Questions()); n < min || n > max {
			return fmt.Errorf("the run asked %d questions", n)
		}
		return nil
	})
}

// Verdict is a judge's answer.
type Verdict struct {
	Score  float64 `json:"score" jsonschema:"minimum=0,maximum=1" jsonschema_description:"how well the output meets the rubric, from 0 to 1"`
	Reason string  `json:"reason" jsonschema_description:"why, in a sentence or two"`
}

// Judge is a check by the model named model ("provider/model", made with models.New and opts):
// given the run's goal, its output and the rubric, it answers a score from 0 to 1 and a
// reason (a Verdict, whose schema bounds the score). The check passes when the score is min or
// more; a judge that cannot answer fails it, with the error as its reason.
func Judge(model, rubric string, min float64, opts ...models.Option) Check {
	return Check{Name: "judge " + model, Score: func(ctx context.Context, r *Outcome) (float64, bool, string) {
		m, err := models.New(model, opts...)
		if err != nil {
			return 0, false, err.Error()
		}
		prompt := fmt.Sprintf("GOAL:\n%s\n\nOUTPUT:\n%s\n\nRUBRIC:\n%s", r.Goal, r.Result.Output, rubric)
		v, _, err := providers.Generate[Verdict](ctx, m, providers.Request{
			System:   "You judge the output of a team of AI agents against its goal and a rubric. Answer a score from 0 (fails the rubric) to 1 (meets it fully) and the reason for it.",
			Messages: []providers.Message{providers.UserText(prompt)},
		})
		if err != nil {
			return 0, false, err.Error()
		}
		return v.Score, v.Score >= min, v.Reason
	}}
}
