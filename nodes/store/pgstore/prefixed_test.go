package pgstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/checkpointtest"
	"github.com/agiraph/agiraph/checkpoint/postgres"
	"github.com/agiraph/agiraph/internal/pgtest"
)

// An agent's saver, which keeps its threads apart in a saver agents share, is a saver of its own:
// each property runs on the threads of another agent of one database.
func TestPrefixedConformance(t *testing.T) {
	pg, err := postgres.Open(context.Background(), pgtest.Start(t))
	require.NoError(t, err)
	t.Cleanup(func() { pg.Close() })
	n := 0
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
		n++
		return prefixed{StepSaver: pg, prefix: fmt.Sprintf("a%d/", n)}
	})
}
