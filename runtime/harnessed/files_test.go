package harnessed_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint/sqlite"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/runtime"
	"github.com/agiraph/agiraph/runtime/adapter"
	"github.com/agiraph/agiraph/runtime/harnessed"
	"github.com/agiraph/agiraph/tools"
)

// files returns the file parts of a message.
func filesOf(m providers.Message) []providers.File {
	var out []providers.File
	for _, p := range m.Parts {
		if p.Type == providers.FilePart {
			out = append(out, *p.File)
		}
	}
	return out
}

// A worker's view_file puts the file's bytes into its next model request, after the tool's
// result; the checkpoint holds a reference to the file, not its bytes.
func TestViewFileShowsTheModelTheFile(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "w.db")
	saver, err := sqlite.Open(dbPath)
	require.NoError(t, err)
	defer saver.Close()
	a := assignment(t, "v1", "Describe the chart.")
	chart := bytes.Repeat(providertest.PNG, 50) // long enough that its base64 cannot occur by chance
	require.NoError(t, os.WriteFile(filepath.Join(a.Dir.Scratch(), "chart.png"), chart, 0o644))
	m := scripted.New("w",
		scripted.Turn{Calls: []tools.Call{call("c1", "view_file", map[string]string{"path": "chart.png"})}},
		scripted.Turn{Calls: []tools.Call{call("c2", "publish", adapter.PublishArgs{Summary: "a grey square"})}},
	).KeepRequests()
	o, err := harnessed.New(m, harnessed.WithSaver(saver)).Run(context.Background(), a, nil)
	require.NoError(t, err)
	require.Equal(t, runtime.Published, o.Status)

	reqs := m.Requests()
	require.Len(t, reqs, 2)
	assert.Empty(t, filesOf(reqs[0].Messages[len(reqs[0].Messages)-1]))
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	assert.Equal(t, []providers.File{{MediaType: "image/png", Name: "chart.png", Data: chart}}, filesOf(last))
	assert.Equal(t, providers.ToolResultPart, last.Parts[0].Type, "the file comes after the tool's result")
	assert.Contains(t, last.Parts[0].ToolResult.Content, "chart.png (image/png")

	require.NoError(t, saver.Close())
	db, err := os.ReadFile(dbPath)
	require.NoError(t, err)
	assert.False(t, bytes.Contains(db, []byte(base64.StdEncoding.EncodeToString(chart))), "the checkpoint holds the file's bytes")
	assert.True(t, bytes.Contains(db, []byte(`"sha256"`)), "the checkpoint holds no reference to the file")
}

// A worker resumed in a new process reads an attached file again: the same bytes are shown as
// they were; a file changed or gone since is shown as a note that says so.
func TestViewFileAfterResume(t *testing.T) {
	for name, c := range map[string]struct {
		change func(path string) error
		files  int
		note   string
	}{
		"unchanged": {func(string) error { return nil }, 1, ""},
		"changed":   {func(p string) error { return os.WriteFile(p, providertest.PDF, 0o644) }, 0, "A file attached earlier cannot be shown: chart.png has changed since it was attached"},
		"gone":      {os.Remove, 0, "A file attached earlier cannot be shown: chart.png is gone"},
	} {
		t.Run(name, func(t *testing.T) {
			saver, err := sqlite.Open(filepath.Join(t.TempDir(), "w.db"))
			require.NoError(t, err)
			defer saver.Close()
			a := assignment(t, "v2", "Describe the chart.")
			path := filepath.Join(a.Dir.Scratch(), "chart.png")
			require.NoError(t, os.WriteFile(path, providertest.PNG, 0o644))
			ctx, cancel := context.WithCancel(context.Background())
			a.Tools = append(a.Tools, tools.Func("block", "Wait.", func(ctx context.Context, _ struct{}) (string, error) {
				cancel() // the process stops while this tool runs, after view_file's step was saved
				<-ctx.Done()
				return "", ctx.Err()
			}))
			first := scripted.New("w", scripted.Turn{Calls: []tools.Call{
				call("c1", "view_file", map[string]string{"path": "chart.png"}), call("c2", "block", struct{}{}),
			}})
			_, err = harnessed.New(first, harnessed.WithSaver(saver)).Run(ctx, a, nil)
			require.True(t, errors.Is(err, context.Canceled), "first run: %v", err)

			require.NoError(t, c.change(path))
			a.Tools[len(a.Tools)-1] = tools.Func("block", "Wait.", func(context.Context, struct{}) (string, error) { return "done", nil })
			rest := scripted.New("w", scripted.Turn{Calls: []tools.Call{call("c3", "publish", adapter.PublishArgs{Summary: "seen"})}}).KeepRequests()
			o, err := harnessed.New(rest, harnessed.WithSaver(saver)).Run(context.Background(), a, nil)
			require.NoError(t, err)
			require.Equal(t, runtime.Published, o.Status)
			last := rest.Requests()[0].Messages[len(rest.Requests()[0].Messages)-1]
			got := filesOf(last)
			require.Len(t, got, c.files)
			if c.files > 0 {
				assert.Equal(t, providertest.PNG, got[0].Data)
			}
			if c.note != "" {
				assert.Contains(t, last.Text(), c.note)
			}
		})
	}
}

// A file the model cannot take is shown to it as a note saying why, and the call made again:
// the worker goes on rather than failing on every turn.
func TestViewFileTheModelRefuses(t *testing.T) {
	a := assignment(t, "v3", "Read the paper.")
	require.NoError(t, os.WriteFile(filepath.Join(a.Dir.Scratch(), "paper.pdf"), providertest.PDF, 0o644))
	imagesOnly := providers.FileLimits{Images: true}
	var seen []string
	m := scripted.NewFunc("eyes", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if err := imagesOnly.CheckMessages("local", "eyes", req.Messages); err != nil {
			return scripted.Turn{}, err
		}
		last := req.Messages[len(req.Messages)-1]
		if len(req.Messages) == 1 {
			return scripted.Turn{Calls: []tools.Call{call("c1", "view_file", map[string]string{"path": "paper.pdf"})}}, nil
		}
		seen = append(seen, last.Text())
		return scripted.Turn{Calls: []tools.Call{call("c2", "publish", adapter.PublishArgs{Summary: "cannot read it"})}}, nil
	})
	o, err := harnessed.New(m).Run(context.Background(), a, nil)
	require.NoError(t, err)
	require.Equal(t, runtime.Published, o.Status)
	require.Len(t, seen, 1)
	assert.Contains(t, seen[0], "[paper.pdf cannot be shown: the model cannot take application/pdf files (paper.pdf); it takes image/png")
}

// When the model call fails, the failure notes name the files the request showed, without
// their bytes.
func TestFailureNotesNameFiles(t *testing.T) {
	a := assignment(t, "v4", "Describe the chart.")
	require.NoError(t, os.WriteFile(filepath.Join(a.Dir.Scratch(), "chart.png"), providertest.PNG, 0o644))
	m := scripted.New("w",
		scripted.Turn{Calls: []tools.Call{call("c1", "view_file", map[string]string{"path": "chart.png"})}},
		scripted.Turn{Err: &providers.Error{Provider: "scripted", Model: "w", Kind: providers.ErrAuth}},
	)
	_, err := harnessed.New(m).Run(context.Background(), a, nil)
	require.ErrorIs(t, err, providers.ErrAuth)
	notes, err := os.ReadFile(a.Dir.Path("failure_notes.md"))
	require.NoError(t, err)
	assert.Contains(t, string(notes), "[file chart.png: image/png, 67 bytes]")
}
