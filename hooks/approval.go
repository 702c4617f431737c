package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agiraph/agiraph/tools"
)

// Policy says which tool calls wait for a human's approval: the calls of the tools whose name
// matches one of Tools, made by the workers whose name matches one of Workers (path.Match
// patterns; an empty list matches all).
type Policy struct {
	Tools   []string `json:"tools,omitempty"`
	Workers []string `json:"workers,omitempty"`
}

// Check returns an error naming the first malformed pattern of p, which Approvals would refuse.
func (p Policy) Check() error {
	if err := badPattern(p.Tools); err != nil {
		return fmt.Errorf("hooks: tools: %w", err)
	}
	if err := badPattern(p.Workers); err != nil {
		return fmt.Errorf("hooks: workers: %w", err)
	}
	return nil
}

// Approvals returns a hook that holds the calls the policies cover for a human's approval (see
// [Approval]). It panics on a malformed pattern, naming it, when the hook is made.
func Approvals(policies ...Policy) Hook {
	for _, p := range policies {
		checkPatterns("hooks.Approvals", p.Tools)
		checkPatterns("hooks.Approvals", p.Workers)
	}
	return approvals{policies: policies}
}

type approvals struct {
	Base
	policies []Policy
}

// BeforeTool asks for the calls a policy covers.
func (a approvals) BeforeTool(ctx context.Context, call *tools.Call) (Decision, error) {
	worker := CallerOf(ctx).Worker
	for _, p := range a.policies {
		if covers(p.Tools, call.Name) && covers(p.Workers, worker) {
			return Ask, nil
		}
	}
	return Run, nil
}

func covers(patterns []string, name string) bool {
	_, ok := matchAny(patterns, name)
	return len(patterns) == 0 || ok
}

// Approval is a tool call that waits for a human's approval: the question a worker stops on
// when a hook asks (runtime.Outcome.Approval). The human answers it with [Approve], [Edit] or
// [Reject], or their text forms (see [ParseVerdict]).
type Approval struct {
	// Worker is who calls; CallID, Tool and Args the call.
	Worker string          `json:"worker,omitempty"`
	CallID string          `json:"call_id"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	// Schema is the JSON Schema of the tool's arguments, which edited arguments must match.
	Schema json.RawMessage `json:"schema,omitempty"`
}

// Question is the approval as a question to the human, for those who read text.
func (a Approval) Question() string {
	var args bytes.Buffer
	if json.Compact(&args, a.Args) != nil {
		args.Write(a.Args)
	}
	return fmt.Sprintf("Approve the call of %s with arguments %s? Answer %q, %q or %q.",
		a.Tool, args.Bytes(), "approve", "edit <arguments as JSON>", "reject <reason>")
}

// Verdict is the human's answer to an approval.
type Verdict struct {
	// Approve runs the call; with Args, with these arguments instead of the model's.
	Approve bool            `json:"approve"`
	Args    json.RawMessage `json:"args,omitempty"`
	// Reason is why the call is rejected, which the model reads.
	Reason string `json:"reason,omitempty"`
}

// Answer is the verdict as the answer's text, which ParseVerdict reads back.
func (v Verdict) Answer() string {
	switch {
	case v.Approve && v.Args != nil:
		return Edit(v.Args)
	case v.Approve:
		return Approve()
	}
	return Reject(v.Reason)
}

// Approve is the answer that runs the call as it is.
func Approve() string { return "approve" }

// Edit is the answer that runs the call with args instead.
func Edit(args json.RawMessage) string { return "edit " + string(args) }

// Reject is the answer that refuses the call; the model reads reason.
func Reject(reason string) string { return "reject " + reason }

// ErrBadVerdict is wrapped by the errors of ParseVerdict.
var ErrBadVerdict = errors.New("hooks: not an answer to an approval")

// ParseVerdict reads a human's answer to a: "approve", "edit" followed by the arguments as a
// JSON object valid against the tool's schema, or "reject" followed by the reason (a colon
// after the word may be there). Any other answer is an error that says what to answer.
func ParseVerdict(a Approval, answer string) (Verdict, error) {
	word, rest, _ := strings.Cut(strings.TrimSpace(answer), " ")
	if w, r, ok := strings.Cut(word, ":"); ok {
		word, rest = w, r+" "+rest
	}
	rest = strings.TrimSpace(rest)
	switch strings.ToLower(word) {
	case "approve", "approved":
		return Verdict{Approve: true}, nil
	case "reject", "rejected":
		if rest == "" {
			rest = "the human rejected it"
		}
		return Verdict{Reason: rest}, nil
	case "edit":
		args := json.RawMessage(rest)
		if !json.Valid(args) {
			return Verdict{}, fmt.Errorf("%w: the edited arguments of %s are not JSON: %s", ErrBadVerdict, a.Tool, rest)
		}
		if !strings.HasPrefix(rest, "{") {
			return Verdict{}, fmt.Errorf("%w: the edited arguments of %s are not a JSON object: %s", ErrBadVerdict, a.Tool, rest)
		}
		if a.Schema != nil {
			if err := tools.Validate(a.Schema, args); err != nil {
				return Verdict{}, fmt.Errorf("%w: the edited arguments of %s: %v", ErrBadVerdict, a.Tool, err)
			}
		}
		return Verdict{Approve: true, Args: args}, nil
	}
	return Verdict{}, fmt.Errorf("%w: answer the call of %s with approve, edit <arguments as JSON> or reject <reason>, not %q", ErrBadVerdict, a.Tool, answer)
}
