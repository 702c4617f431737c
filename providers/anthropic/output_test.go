package anthropic_test

import (
	"testing"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
)

// Structured output goes in output_config.format, as a json_schema format.
func TestStructuredOutput(t *testing.T) {
	providertest.TestStructuredOutput(t, providertest.NewAnthropic, func(t *testing.T, s *providertest.Server) providers.Model {
		return newModel(t, s)
	})
}
