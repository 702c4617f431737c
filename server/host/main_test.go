package host

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/agiraph/agiraph/internal/pgtest"
)

// TestMain runs the tests through pgtest.Run: the tests' PostgreSQL cluster stops before goleak
// looks for goroutines left.
func TestMain(m *testing.M) { goleak.VerifyTestMain(withPostgres{m}) }

// withPostgres runs the tests through pgtest.Run.
type withPostgres struct{ m *testing.M }

func (w withPostgres) Run() int { return pgtest.Run(w.m) }
