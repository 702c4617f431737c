package checkpoint_test

import (
	"testing"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/checkpointtest"
)

func TestMemory_Conformance(t *testing.T) {
	t.Parallel()
	checkpointtest.Run(t, func(*testing.T) checkpoint.Saver { return checkpoint.NewMemory() })
}

func TestMemory_Effects(t *testing.T) {
	t.Parallel()
	checkpointtest.RunEffects(t, func(_ *testing.T, h checkpointtest.Handler) checkpoint.Saver {
		return checkpoint.NewMemory(checkpoint.WithEffects(h))
	})
}
