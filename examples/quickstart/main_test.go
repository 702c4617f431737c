package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestQuickstart(t *testing.T) {
	var out strings.Builder
	db := filepath.Join(t.TempDir(), "runs", "checkpoints.db")
	if err := run(context.Background(), &out, "tides", db); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"flowchart TD",
		"research says researching history",
		"saved at step 3, waiting in [approve]",
		"paused for a human: approve this draft? On tides: history of tides; methods of tides; open questions of tides. (revised)",
		"resumed and finished: approved=true after 2 rounds",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
