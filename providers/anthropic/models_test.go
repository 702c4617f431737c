package anthropic_test

import (
	"testing"

	_ "github.com/agiraph/agiraph/providers/anthropic" // serves anthropic/ names
	"github.com/agiraph/agiraph/providers/providertest"
)

func TestByName(t *testing.T) {
	providertest.ByName(t, "anthropic", providertest.NewAnthropic, "ANTHROPIC_API_KEY")
}
