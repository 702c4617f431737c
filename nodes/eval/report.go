package eval

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agiraph/agiraph/providers"
)

// Report is an evaluation's result: for each case, its run under each configuration, and the
// totals of each configuration. It encodes as JSON as it is (JSON), and as Markdown tables
// (Markdown).
type Report struct {
	Set     string       `json:"set"`
	Configs []string     `json:"configs"`
	Cases   []CaseReport `json:"cases"`
	Totals  []Totals     `json:"totals"` // one per configuration, in their order
}

// CaseReport is a case's runs, one per configuration, in their order.
type CaseReport struct {
	Case string      `json:"case"`
	Runs []RunReport `json:"runs"`
}

// RunReport is a case's run under a configuration: its error, when it failed (a replay's
// divergence, say: then every check fails), its checks' scores and its models' usage.
type RunReport struct {
	Config string          `json:"config"`
	Error  string          `json:"error,omitempty"`
	Checks []Score         `json:"checks"`
	Usage  providers.Usage `json:"usage"`
}

// Score is a check's result on a run.
type Score struct {
	Check    string  `json:"check"`
	Optional bool    `json:"optional,omitempty"`
	Pass     bool    `json:"pass"`
	Value    float64 `json:"score"`
	Reason   string  `json:"reason,omitempty"`
}

// Totals sums a configuration's runs: the checks that passed of all, the mean score, the runs
// that failed, and the models' usage.
type Totals struct {
	Config    string          `json:"config"`
	Passed    int             `json:"passed"`
	Checks    int             `json:"checks"`
	Score     float64         `json:"score"`
	RunErrors int             `json:"run_errors"`
	Usage     providers.Usage `json:"usage"`
}

// total sums each configuration's runs into r.Totals.
func (r *Report) total() {
	r.Totals = make([]Totals, len(r.Configs))
	for i, name := range r.Configs {
		t := &r.Totals[i]
		t.Config = name
		var sum float64
		for _, c := range r.Cases {
			run := c.Runs[i]
			if run.Error != "" {
				t.RunErrors++
			}
			t.Usage = t.Usage.Add(run.Usage)
			for _, s := range run.Checks {
				t.Checks++
				sum += s.Value
				if s.Pass {
					t.Passed++
				}
			}
		}
		if t.Checks > 0 {
			t.Score = sum / float64(t.Checks)
		}
	}
}

// JSON returns the report as indented JSON.
func (r *Report) JSON() []byte {
	b, _ := json.MarshalIndent(r, "", "  ") // plain values: it cannot fail
	return b
}

// Markdown returns the report as Markdown: a table of every case's checks by configuration,
// then the totals.
func (r *Report) Markdown() string {
	var b strings.Builder
	row := func(cells ...string) {
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(strings.ReplaceAll(c, "|", `\|`), "\n", " ")
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
	}
	header := func(first string) {
		row(append([]string{first}, r.Configs...)...)
		row(append([]string{"---"}, strings.Split(strings.Repeat("---,", len(r.Configs)), ",")[:len(r.Configs)]...)...)
	}
	fmt.Fprintf(&b, "## Evaluation: %s\n\n", r.Set)
	header("case / check")
	for _, c := range r.Cases {
		cells := []string{"**" + c.Case + "**"}
		for _, run := range c.Runs {
			cells = append(cells, runCell(run))
		}
		row(cells...)
		for k, s := range c.Runs[0].Checks {
			cells := []string{"&nbsp;&nbsp;" + s.Check}
			for _, run := range c.Runs {
				cells = append(cells, scoreCell(run.Checks[k]))
			}
			row(cells...)
		}
	}
	b.WriteString("\n")
	header("totals")
	for _, line := range []struct {
		name string
		cell func(Totals) string
	}{
		{"checks passed", func(t Totals) string { return fmt.Sprintf("%d/%d", t.Passed, t.Checks) }},
		{"mean score", func(t Totals) string { return fmt.Sprintf("%.2f", t.Score) }},
		{"runs failed", func(t Totals) string { return fmt.Sprint(t.RunErrors) }},
		{"tokens in/out", func(t Totals) string { return fmt.Sprintf("%d/%d", t.Usage.InputTokens, t.Usage.OutputTokens) }},
		{"cost", func(t Totals) string { return fmt.Sprintf("$%.4f", t.Usage.CostUSD) }},
	} {
		cells := []string{line.name}
		for _, t := range r.Totals {
			cells = append(cells, line.cell(t))
		}
		row(cells...)
	}
	return b.String()
}

// runCell is a run's cell in the Markdown table: its error, or its tokens and cost.
func runCell(r RunReport) string {
	if r.Error != "" {
		first, _, _ := strings.Cut(r.Error, "\n")
		return "run failed: " + first
	}
	return fmt.Sprintf("%d tokens, $%.4f", r.Usage.InputTokens+r.Usage.OutputTokens, r.Usage.CostUSD)
}

// scoreCell is a check's cell in the Markdown table.
func scoreCell(s Score) string {
	cell := fmt.Sprintf("pass %.2f", s.Value)
	if !s.Pass {
		cell = fmt.Sprintf("FAIL %.2f", s.Value)
		if s.Optional {
			cell = fmt.Sprintf("fail (optional) %.2f", s.Value)
		}
	}
	if s.Reason != "" {
		cell += ": " + s.Reason
	}
	return cell
}
