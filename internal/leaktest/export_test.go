package leaktest

import (
	"testing"
	"time"
)

// SetGrace sets how long checks wait for goroutines to end, and returns the previous setting.
func SetGrace(d time.Duration) time.Duration {
	old := grace
	grace = d
	return old
}

// ShortGrace makes the checks of t's test wait d for goroutines to end.
func ShortGrace(t testing.TB, d time.Duration) {
	old := SetGrace(d)
	t.Cleanup(func() { SetGrace(old) })
}
