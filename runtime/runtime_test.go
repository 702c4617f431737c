package runtime_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/internal/leaktest"
	"github.com/agiraph/agiraph/runtime"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPublishMovesOutputsAndLeavesProtocolFiles(t *testing.T) {
	d := runtime.NodeDir(t.TempDir())
	write(t, filepath.Join(d.Scratch(), "report.md"), "report")
	write(t, filepath.Join(d.Scratch(), "data", "a.json"), "{}")
	write(t, filepath.Join(d.Scratch(), "_outbox.md"), "protocol")
	write(t, filepath.Join(d.Scratch(), ".hidden"), "x")

	files, err := d.Publish()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"data/a.json", "report.md"}; !reflect.DeepEqual(files, want) {
		t.Fatalf("published %v, want %v", files, want)
	}
	if b, err := os.ReadFile(filepath.Join(d.Published(), "report.md")); err != nil || string(b) != "report" {
		t.Fatalf("published report.md = %q, %v", b, err)
	}
	info, err := os.Stat(filepath.Join(d.Published(), "report.md"))
	if err != nil || info.Mode().Perm()&0o222 != 0 {
		t.Fatalf("published file mode %v, %v; want read-only", info.Mode(), err)
	}
	for _, stays := range []string{"_outbox.md", ".hidden"} {
		if _, err := os.Stat(filepath.Join(d.Scratch(), stays)); err != nil {
			t.Errorf("%s left scratch/: %v", stays, err)
		}
	}
	if _, err := os.Stat(filepath.Join(d.Scratch(), "report.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("report.md still in scratch/: %v", err)
	}
}

func TestPublishNeverReplacesAPublishedFile(t *testing.T) {
	d := runtime.NodeDir(t.TempDir())
	write(t, filepath.Join(d.Scratch(), "report.md"), "v1")
	if _, err := d.Publish(); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d.Scratch(), "report.md"), "v2")
	write(t, filepath.Join(d.Scratch(), "other.md"), "other")
	_, err := d.Publish()
	if err == nil || !strings.Contains(err.Error(), "report.md") {
		t.Fatalf("second publish: err = %v, want one naming report.md", err)
	}
	if b, _ := os.ReadFile(filepath.Join(d.Published(), "report.md")); string(b) != "v1" {
		t.Fatalf("published report.md = %q, want v1 kept", b)
	}
	if _, err := os.Stat(filepath.Join(d.Published(), "other.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused publish moved other files")
	}
}

// calls numbers the calls of run, so that each has its own id, as a model's calls do.
// runtimeFunc is a Runtime from a function.
type runtimeFunc func(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error)

func (f runtimeFunc) Run(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
	return f(ctx, a, sink)
}

func TestWatchStopsASilentAssignment(t *testing.T) {
	defer leaktest.Check(t)()
	silent := runtimeFunc(func(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
		sink(runtime.Event{Kind: runtime.ToolCalled, Tool: &runtime.ToolEvent{Name: "bash"}})
		<-ctx.Done()
		err := context.Cause(ctx)
		return runtime.Outcome{Status: runtime.StatusOf(ctx, err)}, err
	})
	o, err := runtime.Watch(silent, 50*time.Millisecond).Run(context.Background(), runtime.Assignment{Dir: runtime.NodeDir(t.TempDir())}, nil)
	if o.Status != runtime.Stalled || !errors.Is(err, runtime.ErrStalled) {
		t.Fatalf("outcome %v, err %v; want stalled", o.Status, err)
	}
	if !strings.Contains(err.Error(), "tool_called bash") {
		t.Fatalf("error %q does not say what the worker last did", err)
	}
}

func TestWatchCountsFileWritesAsProgress(t *testing.T) {
	defer leaktest.Check(t)()
	d := runtime.NodeDir(t.TempDir())
	const stall = 200 * time.Millisecond
	// The worker emits no events but writes a file every 10ms for four times the stall time;
	// the watchdog must let it finish.
	busy := runtimeFunc(func(ctx context.Context, a runtime.Assignment, sink runtime.Sink) (runtime.Outcome, error) {
		for start, i := time.Now(), 0; time.Since(start) < 4*stall; i++ {
			write(t, filepath.Join(a.Dir.Scratch(), "log.txt"), strings.Repeat("x", i%50))
			select {
			case <-ctx.Done():
				return runtime.Outcome{Status: runtime.StatusOf(ctx, ctx.Err())}, context.Cause(ctx)
			case <-time.After(10 * time.Millisecond):
			}
		}
		return runtime.Outcome{Status: runtime.Published, Summary: "done"}, nil
	})
	o, err := runtime.Watch(busy, stall).Run(context.Background(), runtime.Assignment{Dir: d}, nil)
	if err != nil || o.Status != runtime.Published {
		t.Fatalf("outcome %v, err %v; want published", o.Status, err)
	}
}

func TestStatusOf(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dl, cancel2 := context.WithDeadline(context.Background(), time.Now())
	defer cancel2()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want runtime.Status
	}{
		{context.Background(), errors.New("boom"), runtime.Failed},
		{ctx, ctx.Err(), runtime.Cancelled},
		{dl, dl.Err(), runtime.TimedOut},
		{context.Background(), runtime.ErrStalled, runtime.Stalled},
	} {
		if got := runtime.StatusOf(c.ctx, c.err); got != c.want {
			t.Errorf("StatusOf(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestPublishAgainAnswersTheSame(t *testing.T) {
	d := runtime.NodeDir(t.TempDir())
	write(t, filepath.Join(d.Scratch(), "a.md"), "a")
	first, err := d.Publish()
	if err != nil {
		t.Fatal(err)
	}
	again, err := d.Publish()
	if err != nil || !reflect.DeepEqual(first, again) {
		t.Fatalf("publishing again gave %v, %v; want %v", again, err, first)
	}
}

// Descriptions with commas reach the schema whole (jsonschema:"description=..." would cut them).
// A question ends a report Waiting with the question; one that already ended takes none.
