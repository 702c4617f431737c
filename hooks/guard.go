package hooks

import (
	"context"
	"fmt"
	"path"
	"regexp"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/tools"
)

// Denylist returns a hook that refuses the calls of the tools whose name matches one of
// patterns (path.Match syntax: "shell", "github__*"). It panics on a malformed pattern, naming
// it, when the hook is made.
func Denylist(patterns ...string) Hook {
	checkPatterns("hooks.Denylist", patterns)
	return denylist{patterns: patterns}
}

type denylist struct {
	Base
	patterns []string
}

// BeforeTool refuses a denied tool.
func (d denylist) BeforeTool(_ context.Context, call *tools.Call) (Decision, error) {
	if p, ok := matchAny(d.patterns, call.Name); ok {
		return Run, Refuse(fmt.Sprintf("the tool %s is not allowed here (denied by %q)", call.Name, p))
	}
	return Run, nil
}

// checkPatterns panics on the first malformed pattern.
func checkPatterns(who string, patterns []string) {
	if err := badPattern(patterns); err != nil {
		panic(who + ": " + err.Error())
	}
}

// badPattern returns the error of the first malformed pattern among patterns, naming it.
func badPattern(patterns []string) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", p, err)
		}
	}
	return nil
}

// matchAny returns the first of patterns that name matches.
func matchAny(patterns []string, name string) (string, bool) {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return p, true
		}
	}
	return "", false
}

// RedactPII returns a hook that replaces e-mail addresses, phone numbers and payment card
// numbers with [email], [phone] and [card]: in tool results before the model reads them, and
// in the text and tool results of the messages sent to the model. Card numbers are 13 to 19
// digits, maybe grouped by spaces or dashes, that pass the Luhn check; phone numbers are
// international (+ and 8 to 15 digits) or grouped like (555) 123-4567 and 555-123-4567.
func RedactPII() Hook { return redactor{} }

type redactor struct{ Base }

var (
	emailRE = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`)
	cardRE  = regexp.MustCompile(`\b\d(?:[ -]?\d){12,18}\b`)
	phoneRE = regexp.MustCompile(`\+\d(?:[ .-]?\d){7,14}\b|(?:\(\d{3}\)\s?|\b\d{3}[ .-])\d{3}[ .-]\d{4}\b`)
)

// Redact returns s with its e-mail addresses, card numbers and phone numbers replaced.
func Redact(s string) string {
	s = emailRE.ReplaceAllString(s, "[email]")
	s = cardRE.ReplaceAllStringFunc(s, func(m string) string {
		if luhn(m) {
			return "[card]"
		}
		return m
	})
	return phoneRE.ReplaceAllString(s, "[phone]")
}

// luhn reports whether the digits of s pass the Luhn check.
func luhn(s string) bool {
	sum, double := 0, false
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] < '0' || s[i] > '9' {
			continue
		}
		d := int(s[i] - '0')
		if double {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum, double = sum+d, !double
	}
	return sum%10 == 0
}

// BeforeModel redacts the text and tool results of the request's messages.
func (redactor) BeforeModel(_ context.Context, req *providers.Request) error {
	for i, m := range req.Messages {
		for j, p := range m.Parts {
			switch {
			case p.Type == providers.TextPart && Redact(p.Text) != p.Text:
				p.Text = Redact(p.Text)
			case p.ToolResult != nil && Redact(p.ToolResult.Content) != p.ToolResult.Content:
				r := *p.ToolResult
				r.Content = Redact(r.Content)
				p.ToolResult = &r
			default:
				continue
			}
			req.Messages[i].Parts[j] = p
		}
	}
	return nil
}

// AfterTool redacts the result.
func (redactor) AfterTool(_ context.Context, _ tools.Call, res *tools.Result) error {
	res.Content = Redact(res.Content)
	return nil
}
