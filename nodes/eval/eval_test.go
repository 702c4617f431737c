package eval_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/eval"
	"github.com/agiraph/agiraph/nodes/replay"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/tools"
)

var update = flag.Bool("update", false, "record the cassettes of testdata again")

// topics are the goals of the five recorded runs.
var topics = []string{"AI chips", "solid-state batteries", "RISC-V laptops", "open-weight models", "heat pumps"}

// researcher is a scripted research squad: the coordinator puts one research node on the
// board, waits, and finishes with a report once the stage is complete; the worker writes its
// findings in findings.md and publishes. A hasty worker writes notes.md instead, with less in
// it, and its model takes more tokens at a higher price.
func researcher(hasty bool) *scripted.Model {
	name := "researcher"
	if hasty {
		name = "hasty"
	}
	return scripted.NewFunc(name, func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		turn := scripted.Turn{Usage: providers.Usage{InputTokens: 100, OutputTokens: 20, CostUSD: 0.0006}}
		if hasty {
			turn.Usage = providers.Usage{InputTokens: 300, OutputTokens: 60, CostUSD: 0.0027}
		}
		call := func(name string, args any) {
			raw, _ := json.Marshal(args)
			turn.Calls = []tools.Call{{ID: fmt.Sprintf("call-%d", len(req.Messages)), Name: name, Args: raw}}
		}
		first, last := req.Messages[0].Text(), req.Messages[len(req.Messages)-1].Text()
		switch {
		case !strings.Contains(req.System, "OPERATING RULES") && len(req.Messages) == 1: // a worker
			topic := between(first, "Research ", ":")
			if hasty {
				call("write_file", map[string]string{"path": "nodes/n1/scratch/notes.md", "content": topic + "?"})
			} else {
				call("write_file", map[string]string{"path": "nodes/n1/scratch/findings.md", "content": "Findings on " + topic + "."})
			}
		case !strings.Contains(req.System, "OPERATING RULES"):
			call("publish", map[string]string{"summary": "researched"})
		case len(req.Messages) == 1:
			call("create_work_node", map[string]string{"task": "Research " + strings.TrimPrefix(first, "GOAL: ") + ": write findings.md, then publish."})
		case strings.Contains(last, "Stage 1 is complete"):
			call("finish", map[string]string{"output": "A report on " + strings.TrimPrefix(first, "GOAL: ") + " is published."})
		case strings.Contains(last, "The run is ending"):
			turn.Text = "Nothing to store."
		default:
			call("wait", map[string]string{})
		}
		return turn, nil
	})
}

// between returns the text of s between the first from and the next to.
func between(s, from, to string) string {
	_, rest, _ := strings.Cut(s, from)
	topic, _, _ := strings.Cut(rest, to)
	return topic
}

// squad is the options of a squad of m.
func squad(m *scripted.Model) []nodes.Option {
	return []nodes.Option{nodes.WithModel(m.Name()), nodes.WithTick(20 * time.Millisecond),
		nodes.WithModelResolver(func(string) (providers.Model, error) { return m, nil })}
}

// cassette is the path of topic i's cassette.
func cassette(i int) string { return fmt.Sprintf("testdata/research-%d.cassette", i+1) }

// recordAll records the five runs of the researcher into testdata.
func recordAll(t *testing.T) {
	for i, topic := range topics {
		rec, err := replay.Record(cassette(i))
		require.NoError(t, err)
		s, err := nodes.New(append(squad(researcher(false)), nodes.WithHome(t.TempDir()), nodes.WithRecorder(rec))...)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := s.Run(ctx, topic)
		cancel()
		require.NoError(t, err)
		require.NoError(t, rec.Finish(s, res))
		require.NoError(t, s.Close())
	}
}

// researchSet is the set of the five recorded runs, with checks of the board, the published
// findings, the output, the tokens, the cost and the questions asked.
func researchSet() eval.Set {
	set := eval.Set{Name: "research"}
	for i, topic := range topics {
		set.Cases = append(set.Cases, eval.Case{Name: topic, Cassette: cassette(i), Checks: []eval.Check{
			eval.Finished(),
			eval.Nodes(1, 3),
			eval.Published("findings.md", topic),
			eval.OutputMatches(`^A report on .+ is published\.$`),
			eval.TokensUnder(1000),
			eval.CostUnder(0.01),
			eval.Questions(0, 0),
		}})
	}
	return set
}

// Five recorded runs scored for two configurations: the recorded squad, replayed, and a
// squad with a hasty worker, run live offline on the recorded goals. The report gives each
// case's checks side by side, and the totals.
func TestFiveRecordedRunsTwoConfigurations(t *testing.T) {
	if *update {
		recordAll(t)
	}
	rep, err := eval.Evaluate(t.Context(), researchSet(),
		eval.Config{Name: "recorded"},
		eval.Config{Name: "hasty worker", Live: true, Options: squad(researcher(true))})
	require.NoError(t, err)
	t.Log("\n" + rep.Markdown())

	require.Len(t, rep.Cases, 5)
	assert.Equal(t, []string{"recorded", "hasty worker"}, rep.Configs)
	recorded, hasty := rep.Totals[0], rep.Totals[1]
	assert.Equal(t, eval.Totals{Config: "recorded", Passed: 35, Checks: 35, Score: 1,
		Usage: providers.Usage{InputTokens: 3000, OutputTokens: 600, CostUSD: recorded.Usage.CostUSD}}, recorded)
	assert.InDelta(t, 0.018, recorded.Usage.CostUSD, 1e-9)
	// The hasty worker publishes no findings.md, and its model takes 2,160 tokens and $0.0162 a
	// run.
	assert.Equal(t, 20, hasty.Passed)
	assert.Equal(t, 0, hasty.RunErrors)
	assert.Equal(t, 9000, hasty.Usage.InputTokens)
	for _, c := range rep.Cases {
		byCheck := map[string]eval.Score{}
		for _, s := range c.Runs[1].Checks {
			byCheck[s.Check] = s
		}
		assert.Equal(t, "no node published findings.md", byCheck["published findings.md"].Reason, c.Case)
		assert.Equal(t, "the run took 2160 tokens", byCheck["tokens < 1000"].Reason, c.Case)
		assert.Equal(t, "the run cost $0.0162", byCheck["cost < $0.01"].Reason, c.Case)
		assert.True(t, byCheck["output matches ^A report on .+ is published\\.$"].Pass, c.Case)
	}
	md := rep.Markdown()
	assert.Contains(t, md, "| checks passed | 35/35 | 20/35 |")
	assert.Contains(t, md, "| **AI chips** | 720 tokens, $0.0036 | 2160 tokens, $0.0162 |")

	var decoded eval.Report
	require.NoError(t, json.Unmarshal(rep.JSON(), &decoded))
	assert.Equal(t, *rep, decoded)

	eval.Run(t, researchSet(), eval.Config{Name: "recorded"}) // passes: every required check does
}

// A replayed case under a configuration that changes what the run asks — here the
// coordinator's prompt — diverges, and the report says so as the case's result.
func TestDivergenceIsTheCasesResult(t *testing.T) {
	set := researchSet()
	set.Cases = set.Cases[:1]
	rep, err := eval.Evaluate(t.Context(), set, eval.Config{Name: "careful", Soul: "You are a careful coordinator."})
	require.NoError(t, err)
	run := rep.Cases[0].Runs[0]
	assert.Contains(t, run.Error, "replay: the run diverged at model call 1 of coordinator")
	assert.Equal(t, eval.Totals{Config: "careful", Checks: 7, RunErrors: 1}, rep.Totals[0])
	assert.Equal(t, "the run failed", run.Checks[0].Reason)
	assert.Contains(t, rep.Markdown(), "| **AI chips** | run failed: replay: the run diverged at model call 1 of coordinator")
}

// A judge model scores the run's output against a rubric, with a reason; a custom check is a
// Go func; a live case runs its goal.
func TestJudgeAndCustomChecks(t *testing.T) {
	var asked string
	judge := scripted.NewFunc("judge", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		asked = req.Messages[0].Text()
		return scripted.Turn{Text: `{"score": 0.75, "reason": "names the topic, cites nothing"}`}, nil
	})
	set := eval.Set{Name: "live", Cases: []eval.Case{{Name: "chips", Goal: "AI chips", Checks: []eval.Check{
		eval.Judge("scripted/judge", "The report names its topic and cites sources.", 0.7, models.WithModels(judge)),
		func() eval.Check {
			c := eval.Judge("scripted/judge", "The same.", 0.8, models.WithModels(judge))
			c.Optional = true
			return c
		}(),
		eval.Func("one worker", func(o *eval.Outcome) error {
			if n := len(o.Result.Board.Workers); n != 1 {
				return fmt.Errorf("%d workers", n)
			}
			return nil
		}),
	}}}}
	rep := eval.Run(t, set, eval.Config{Name: "researcher", Options: squad(researcher(false))})
	checks := rep.Cases[0].Runs[0].Checks
	assert.Equal(t, eval.Score{Check: "judge scripted/judge", Pass: true, Value: 0.75, Reason: "names the topic, cites nothing"}, checks[0])
	assert.Equal(t, eval.Score{Check: "judge scripted/judge", Optional: true, Value: 0.75, Reason: "names the topic, cites nothing"}, checks[1])
	assert.Equal(t, eval.Score{Check: "one worker", Pass: true, Value: 1}, checks[2])
	assert.Contains(t, asked, "GOAL:\nAI chips\n\nOUTPUT:\nA report on AI chips is published.")
	assert.Contains(t, rep.Markdown(), "fail (optional) 0.75: names the topic, cites nothing")
}

// A set Evaluate cannot run is refused, naming what is wrong.
func TestBadSets(t *testing.T) {
	for _, tc := range []struct {
		set  eval.Set
		cfgs []eval.Config
		want string
	}{
		{eval.Set{Name: "empty"}, nil, `set "empty" has no cases`},
		{eval.Set{Cases: []eval.Case{{Name: "both", Goal: "g", Cassette: cassette(0)}}}, nil, `case "both": give it a goal or a cassette`},
		{eval.Set{Cases: []eval.Case{{Name: "none"}}}, nil, `case "none": give it a goal or a cassette`},
		{eval.Set{Cases: []eval.Case{{Name: "a", Goal: "g"}, {Name: "a", Goal: "g"}}}, nil, `case "a" of set "": each needs a name of its own`},
		{eval.Set{Cases: []eval.Case{{Name: "lost", Cassette: filepath.Join(t.TempDir(), "no.cassette")}}}, nil, `case "lost": replay:`},
		{eval.Set{Cases: []eval.Case{{Name: "a", Goal: "g"}}}, []eval.Config{{Name: "x"}, {Name: "x"}}, `configuration "x": each needs a name of its own`},
	} {
		_, err := eval.Evaluate(t.Context(), tc.set, tc.cfgs...)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}
