package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/triggers"
)

// The offline agent reports each file once: two cycles in one process, then a restart that
// remembers what it reported.
func TestMonitorReportsEachFileOnce(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	write := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt")
	write("b.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, []string{"-home", home, "-dir", dir, "-every", "1s", "-cycles", "2"}, &out, func(string) string { return "" }); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "New files: a.txt, b.txt") || !strings.Contains(out.String(), "No new files.") {
		t.Fatalf("first process:\n%s", out.String())
	}

	write("c.txt")
	out.Reset()
	if err := run(ctx, []string{"-home", home, "-dir", dir, "-every", "1s", "-cycles", "1"}, &out, func(string) string { return "" }); err != nil {
		t.Fatalf("second run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "New files: c.txt") || strings.Contains(out.String(), "a.txt") {
		t.Fatalf("after the restart the agent should report only c.txt:\n%s", out.String())
	}
	ts, err := nodes.ReadFiles(nodes.WithHome(home)).Triggers()
	if err != nil {
		t.Fatal(err)
	}
	heartbeats := 0
	for _, tr := range ts {
		if tr.Type == triggers.Heartbeat {
			heartbeats++
		}
	}
	if heartbeats != 1 {
		t.Fatalf("%d heartbeats after two runs, want 1: %+v", heartbeats, ts)
	}
}

func TestMonitorFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-help"}, &out, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"-dir", "-every", "-cycles", "-home", "-model"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("-help does not explain %s", f)
		}
	}
	if err := run(context.Background(), []string{"-every", "10ms"}, &out, func(string) string { return "" }); err == nil {
		t.Error("a heartbeat under a second was accepted")
	}
}
