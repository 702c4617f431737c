// Package eval runs an evaluation set — goals run live, or recorded runs replayed (see package
// replay) — against one or more configurations of a squad, scores each run with checks written
// in Go or by a judge model, and reports the configurations side by side, as Markdown or JSON.
//
// A replayed case whose configuration changes what the run asks diverges: the report says so
// as the case's result. A configuration that runs live (Config.Live) runs a recorded case's
// goal with its own models, which is how two models or two prompts are compared.
package eval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/replay"
	"github.com/agiraph/agiraph/nodes/workspace"
)

// Set is an evaluation set: cases run as a suite.
type Set struct {
	Name  string
	Cases []Case
}

// Case is one goal run live, or one recorded run replayed, with the checks its run is scored by.
// Exactly one of Goal and Cassette is set.
type Case struct {
	Name     string
	Goal     string // run live with this goal
	Cassette string // or replay this cassette (run its recorded goal live under a Live config)
	Checks   []Check
}

// Config is a configuration of the squad a set runs under.
type Config struct {
	Name string
	// Options are the squad's options (models, tools, tick…); in a replay they come after the
	// recorded ones, as replay.Play takes them. The agent's home is the evaluation's own.
	Options []nodes.Option
	// Soul, when set, is written to the agent's SOUL.md before the run: the coordinator's prompt.
	Soul string
	// Live runs a recorded case's goal live with Options instead of replaying it.
	Live bool
}

// Outcome is a case's run under a configuration, as checks see it.
type Outcome struct {
	Case, Config string
	Goal         string
	Home         workspace.Home
	Result       nodes.Result
	Events       []eventlog.Event // the agent's events after the run
}

// Published returns the contents of the file name published by any node of the run.
func (r *Outcome) Published(name string) (string, bool) {
	for _, n := range r.Result.Board.Nodes {
		for _, p := range n.Published {
			if p == name {
				b, err := os.ReadFile(filepath.Join(r.Home.Run(r.Result.RunID).Node(n.ID).Published(), filepath.FromSlash(p)))
				return string(b), err == nil
			}
		}
	}
	return "", false
}

// Questions returns the questions the run put to the human.
func (r *Outcome) Questions() []string {
	var qs []string
	for _, e := range r.Events {
		if e.Type == eventlog.HumanQuestion && e.Run == r.Result.RunID {
			qs = append(qs, e.Text)
		}
	}
	return qs
}

// Evaluate runs every case of set under each configuration (one default configuration when
// none is given), one run at a time, each in a new home, and returns the report. A run that
// fails — a replay's divergence, say — is its case's result, not Evaluate's error; Evaluate
// fails on a set it cannot run (a case without a goal or a cassette, a cassette it cannot load,
// two cases or configurations of one name) or when ctx ends. A live run has no human to answer
// it: a question it asks waits until ctx ends; a replay gives the recorded answers.
func Evaluate(ctx context.Context, set Set, configs ...Config) (*Report, error) {
	if len(configs) == 0 {
		configs = []Config{{Name: "default"}}
	}
	goals, err := check(set, configs)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agiraph-eval-")
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }() // the runs' homes; what is left of them is temporary
	rep := &Report{Set: set.Name}
	for _, cfg := range configs {
		rep.Configs = append(rep.Configs, cfg.Name)
	}
	for i, c := range set.Cases {
		cr := CaseReport{Case: c.Name}
		for j, cfg := range configs {
			home := filepath.Join(dir, fmt.Sprintf("%d-%d", i, j))
			run, err := runCase(ctx, c, goals[i], cfg, home)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("eval: case %q under %q: %w", c.Name, cfg.Name, ctx.Err())
			}
			cr.Runs = append(cr.Runs, score(ctx, c, run, err))
		}
		rep.Cases = append(rep.Cases, cr)
	}
	rep.total()
	return rep, nil
}

// check returns the goal of each case of set, or what makes the set or configs unusable.
func check(set Set, configs []Config) ([]string, error) {
	if len(set.Cases) == 0 {
		return nil, fmt.Errorf("eval: set %q has no cases", set.Name)
	}
	seen := map[string]bool{}
	for _, cfg := range configs {
		if cfg.Name == "" || seen["config "+cfg.Name] {
			return nil, fmt.Errorf("eval: configuration %q: each needs a name of its own", cfg.Name)
		}
		seen["config "+cfg.Name] = true
	}
	var goals []string
	for _, c := range set.Cases {
		if c.Name == "" || seen["case "+c.Name] {
			return nil, fmt.Errorf("eval: case %q of set %q: each needs a name of its own", c.Name, set.Name)
		}
		seen["case "+c.Name] = true
		switch {
		case (c.Goal == "") == (c.Cassette == ""):
			return nil, fmt.Errorf("eval: case %q: give it a goal or a cassette, not both or neither", c.Name)
		case c.Cassette != "":
			cas, err := replay.Load(c.Cassette)
			if err != nil {
				return nil, fmt.Errorf("eval: case %q: %w", c.Name, err)
			}
			goals = append(goals, cas.Header.Run.Goal)
		default:
			goals = append(goals, c.Goal)
		}
	}
	return goals, nil
}

// runCase runs case c, whose goal is goal, under cfg in the agent's home home.
func runCase(ctx context.Context, c Case, goal string, cfg Config, home string) (*Outcome, error) {
	h := workspace.Home(home)
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if cfg.Soul != "" {
		if err := os.WriteFile(h.Soul(), []byte(cfg.Soul), 0o644); err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
	}
	r := &Outcome{Case: c.Name, Config: cfg.Name, Goal: goal, Home: h}
	var err error
	if c.Cassette != "" && !cfg.Live {
		r.Result, err = replay.Play(ctx, c.Cassette, home, cfg.Options...)
	} else {
		r.Result, err = live(ctx, goal, slices.Concat(cfg.Options, []nodes.Option{nodes.WithHome(home)}))
	}
	if err != nil {
		return r, err
	}
	r.Events, err = nodes.ReadFiles(nodes.WithHome(home)).Events(0, 0)
	return r, err
}

// live runs goal with a squad of opts.
func live(ctx context.Context, goal string, opts []nodes.Option) (nodes.Result, error) {
	s, err := nodes.New(opts...)
	if err != nil {
		return nodes.Result{}, err
	}
	res, err := s.Run(ctx, goal)
	return res, errors.Join(err, s.Close())
}

// Run evaluates set under configs in a test (see Evaluate), logs the report's Markdown, and
// fails the test for each required check that fails and each run that fails. It returns the
// report.
func Run(t testing.TB, set Set, configs ...Config) *Report {
	t.Helper()
	rep, err := Evaluate(t.Context(), set, configs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.Markdown())
	for _, c := range rep.Cases {
		for _, r := range c.Runs {
			if r.Error != "" {
				t.Errorf("eval: case %q under %q: %s", c.Case, r.Config, r.Error)
				continue
			}
			for _, s := range r.Checks {
				if !s.Pass && !s.Optional {
					t.Errorf("eval: case %q under %q: check %s failed: %s", c.Case, r.Config, s.Check, s.Reason)
				}
			}
		}
	}
	return rep
}

// score scores run, whose run returned err, with c's checks.
func score(ctx context.Context, c Case, run *Outcome, err error) RunReport {
	r := RunReport{Config: run.Config, Usage: run.Result.Usage}
	if err != nil {
		r.Error = err.Error()
	}
	for _, ch := range c.Checks {
		s := Score{Check: ch.Name, Optional: ch.Optional, Reason: "the run failed"}
		if err == nil {
			s = ch.score(ctx, run)
		}
		r.Checks = append(r.Checks, s)
	}
	return r
}
