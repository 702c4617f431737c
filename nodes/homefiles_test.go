package nodes_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/nodes/eventlog"
	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/store/sqlitestore"
	"github.com/agiraph/agiraph/providers"
)

// A run paused in one home is resumed in another that shares only its store (as replicas of a
// server on one database and separate folders do): the files the store keeps — the research
// nodes' published findings, the agent's daily memory log — are written back, and the run
// finishes with the output of a run that never moved.
func TestResumeInAnotherHome(t *testing.T) {
	const goal = "AI chips"
	want := run(t, newSquad(t), goal).Output
	st := store.NewMemory()
	first, second := t.TempDir(), t.TempDir()
	pauseOnceResearched(t, st, first, goal)

	s := openOn(t, st, second)
	defer s.Close()
	daily := filepath.Join("memory", memory.DailyLog(time.Now()))
	assert.Equal(t, mustRead(t, filepath.Join(first, daily)), mustRead(t, filepath.Join(second, daily)), "the daily log, written back as the squad opens")
	resumeFinishes(t, s, want, first, second)
}

// A run whose folder a resume in another home could not rebuild whole (a file kept in the store
// is damaged) is rebuilt by the next resume, once the damaged document is deleted: the folder
// the first left is not taken for the run's.
func TestResumeInAnotherHomeAfterAFailedRestore(t *testing.T) {
	const goal = "AI chips"
	want := run(t, newSquad(t), goal).Output
	st := store.NewMemory()
	first, second := t.TempDir(), t.TempDir()
	pauseOnceResearched(t, st, first, goal)
	const damaged = "file/runs/r1/a.md" // before the nodes' files
	var ch store.Change
	require.NoError(t, ch.Put(damaged, "not a file"))
	require.NoError(t, st.Apply(context.Background(), ch))

	s := openOn(t, st, second)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := resume(ctx, s, "r1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), damaged)

	ch = store.Change{}
	ch.Delete(damaged)
	require.NoError(t, st.Apply(ctx, ch))
	resumeFinishes(t, s, want, first, second)
}

// resumeFinishes resumes r1 with s, on home to, and asserts that it finishes with the output
// want, a research node's published findings as they were published in home from.
func resumeFinishes(t *testing.T, s *nodes.Squad, want, from, to string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := resume(ctx, s, "r1")
	require.NoError(t, err)
	assert.True(t, res.Finished)
	assert.Equal(t, want, res.Output)
	findings := filepath.Join("runs", "r1", "nodes", "n1", "published", "findings.md")
	assert.Equal(t, mustRead(t, filepath.Join(from, findings)), mustRead(t, filepath.Join(to, findings)))
	fi, err := os.Stat(filepath.Join(to, findings))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o444), fi.Mode().Perm(), "published files stay read-only")
}

// openOn opens a squad of the demo team on home and st, its models ms (demo.Models() if none).
func openOn(t *testing.T, st store.Store, home string, ms ...providers.Model) *nodes.Squad {
	t.Helper()
	if len(ms) == 0 {
		ms = demo.Models()
	}
	s, err := nodes.New(nodes.WithHome(home), nodes.WithStore(st), nodes.WithTick(20*time.Millisecond),
		nodes.WithModel(demo.WorkerModel), nodes.WithCoordinatorModel(demo.CoordinatorModel),
		nodes.WithModelOptions(models.WithModels(ms...), models.WithoutRetry()))
	require.NoError(t, err)
	return s
}

// pauseOnceResearched runs r1 toward goal on home and st, and pauses it once its three research
// nodes have published: as the synthesis node begins.
func pauseOnceResearched(t *testing.T, st store.Store, home, goal string) {
	t.Helper()
	pauseAt(t, st, home, goal, synthesis)
}

// synthesis picks the turns of the demo team's synthesis node.
func synthesis(req providers.Request) bool {
	return strings.Contains(req.Messages[0].Text(), "Synthesize the findings")
}

// heldWorker is the demo team's worker but for the turns hold picks, which wait until the run
// is paused (their context ends): the run goes no further than them. held is closed at the
// first.
type heldWorker struct {
	providers.Model
	hold func(providers.Request) bool
	once sync.Once
	held chan struct{}
}

func (m *heldWorker) Generate(ctx context.Context, req providers.Request) (providers.Response, error) {
	if !m.hold(req) {
		return m.Model.Generate(ctx, req)
	}
	m.once.Do(func() { close(m.held) })
	<-ctx.Done()
	return providers.Response{}, ctx.Err()
}

// holding returns the demo team's models, the worker's turns that hold picks held.
func holding(hold func(providers.Request) bool) (coordinator providers.Model, worker *heldWorker) {
	ms := demo.Models()
	return ms[0], &heldWorker{Model: ms[1], hold: hold, held: make(chan struct{})}
}

// pauseAt runs r1 toward goal on home and st (resumes it, with no goal), and pauses it at the
// first worker turn hold picks.
func pauseAt(t *testing.T, st store.Store, home, goal string, hold func(providers.Request) bool) {
	t.Helper()
	coord, worker := holding(hold)
	s := openOn(t, st, home, coord, worker)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var r *nodes.Run
	var err error
	if goal == "" {
		r, err = s.Resume(ctx, "r1")
	} else {
		r, err = s.Start(ctx, goal, nodes.WithRunID("r1"))
	}
	require.NoError(t, err)
	select {
	case <-worker.held:
	case <-r.Done():
		_, err := r.Wait()
		require.Failf(t, "the run ended before the turn awaited", "%v", err)
	}
	cancel()
	_, err = r.Wait()
	require.ErrorIs(t, err, nodes.ErrInterrupted)
	require.NoError(t, s.Close())
}

// A run taken over by another home and taken back: the folder the first home kept is behind
// the store (the research nodes published in the other), and is rebuilt from it rather than
// resumed as it is; the synthesis node, paused in the other home once it had written its report
// in its scratch folder, which is not kept, starts again; the run finishes with the output of a
// run that never moved.
func TestResumeTakenBack(t *testing.T) {
	const goal = "AI chips"
	want := run(t, newSquad(t), goal).Output
	st := store.NewMemory()
	first, second := t.TempDir(), t.TempDir()
	pauseAt(t, st, first, goal, func(providers.Request) bool { return true })
	pauseAt(t, st, second, "", func(req providers.Request) bool {
		return synthesis(req) && slices.ContainsFunc(req.Messages, func(m providers.Message) bool {
			return slices.ContainsFunc(m.Parts, func(p providers.Part) bool {
				return p.ToolResult != nil && p.ToolResult.Name == "write_file" && !p.ToolResult.IsError
			})
		})
	})

	s := openOn(t, st, first)
	defer s.Close()
	resumeFinishes(t, s, want, second, first)
}

// A run whose tick failed to save as it started its nodes' attempts (the store went away)
// is resumed in another home: the tick's dispatch runs again there, but the attempts it
// started, which worked in the first home's folder, start again as the nodes' next attempts,
// once each; the run finishes with the output of a run that never moved.
func TestResumeInAnotherHomeAfterAFailedDispatch(t *testing.T) {
	const goal = "AI chips"
	want := run(t, newSquad(t), goal).Output
	st := store.NewMemory()
	first, second := t.TempDir(), t.TempDir()
	coord, worker := holding(func(providers.Request) bool { return true })
	s := openOn(t, failingDispatch{st}, first, coord, worker)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := s.Run(ctx, goal, nodes.WithRunID("r1"))
	require.ErrorIs(t, err, errStoreAway)
	require.NoError(t, s.Close())

	s = openOn(t, st, second)
	defer s.Close()
	resumeFinishes(t, s, want, second, second)
	evs, err := s.Events(0, 0)
	require.NoError(t, err)
	started := map[string]int{}
	for _, e := range evs {
		if e.Type == eventlog.NodeStarted {
			started[e.Node]++
		}
	}
	assert.Equal(t, map[string]int{"n1": 1, "n2": 1, "n3": 1, "n4": 1}, started, "each node started once in the second home")
	b, err := s.ReadBoard("r1")
	require.NoError(t, err)
	for _, n := range b.Nodes[:3] {
		assert.Equal(t, 2, n.Attempts, n.ID)
	}
}

// errStoreAway is the error of a failingDispatch's saver.
var errStoreAway = errors.New("the store went away")

// failingDispatch is a store whose saver fails to save what the squad's dispatch tasks (which
// start the nodes' attempts) wrote.
type failingDispatch struct{ store.Store }

func (f failingDispatch) Saver() checkpoint.Saver { return dispatchSaver{f.Store.Saver()} }

type dispatchSaver struct{ checkpoint.Saver }

func (s dispatchSaver) PutWrites(ctx context.Context, cfg checkpoint.Config, writes []checkpoint.Write) error {
	if slices.ContainsFunc(writes, func(w checkpoint.Write) bool { return w.Node == "dispatch" }) {
		return errStoreAway
	}
	return s.Saver.PutWrites(ctx, cfg, writes)
}

// A node whose published file is larger than the store keeps fails, and its next attempt, which
// publishes what the store keeps, completes it: the refused files do not stay published.
func TestTooLargeAPublishedFileIsRetried(t *testing.T) {
	home := t.TempDir()
	var mu sync.Mutex
	tried := map[string]int{}
	worker := noteWorker("big-worker", func(_ context.Context, node string) error {
		mu.Lock()
		defer mu.Unlock()
		if tried[node]++; tried[node] > 1 {
			return nil
		}
		big := filepath.Join(home, "runs", "r1", "nodes", node, "scratch", "big.bin")
		f, err := os.Create(big)
		if err == nil {
			err = errors.Join(f.Truncate(nodes.MaxStoredFile+1), f.Close())
		}
		return err
	})
	coord := benchCoordinator(1, 1)
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db")) // outside the home: it keeps files
	require.NoError(t, err)
	defer st.Close()
	s, err := nodes.New(nodes.WithHome(home), nodes.WithStore(st), nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
		nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()), nodes.WithTick(20*time.Millisecond))
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := s.Run(ctx, "Write the notes.", nodes.WithRunID("r1"))
	require.NoError(t, err)
	assert.Equal(t, "all notes written", res.Output)
	require.Len(t, res.Board.Nodes, 1)
	n := res.Board.Nodes[0]
	assert.Equal(t, nodes.NodeCompleted, n.Status)
	assert.Equal(t, 2, n.Attempts)
	assert.Equal(t, []string{"note.md"}, n.Published)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 2, tried[n.ID])
}

// A squad on its home's own store (state.db, the default) keeps no files in it — they would be
// lost together — so a published file larger than MaxStoredFile is published, and a run whose
// folder is gone is not rebuilt from the store without them but refused as damaged.
func TestOwnStoreKeepsNoFiles(t *testing.T) {
	home := t.TempDir()
	worker := noteWorker("big-worker", func(_ context.Context, node string) error {
		f, err := os.Create(filepath.Join(home, "runs", "r1", "nodes", node, "scratch", "big.bin"))
		if err == nil {
			err = errors.Join(f.Truncate(nodes.MaxStoredFile+1), f.Close())
		}
		return err
	})
	coord := benchCoordinator(1, 1)
	opts := []nodes.Option{nodes.WithHome(home), nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
		nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()), nodes.WithTick(20 * time.Millisecond)}
	s, err := nodes.New(opts...)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := s.Run(ctx, "Write the notes.", nodes.WithRunID("r1"))
	require.NoError(t, err)
	require.Len(t, res.Board.Nodes, 1)
	assert.Equal(t, nodes.NodeCompleted, res.Board.Nodes[0].Status)
	assert.ElementsMatch(t, []string{"big.bin", "note.md"}, res.Board.Nodes[0].Published)
	require.NoError(t, s.Close())

	r, err := sqlitestore.OpenReader(filepath.Join(home, "state.db"))
	require.NoError(t, err)
	files, err := r.Docs(ctx, "file/")
	require.NoError(t, err)
	assert.Empty(t, files)
	require.NoError(t, r.Close())
	assert.NoFileExists(t, filepath.Join(home, ".home-id"))

	require.NoError(t, os.RemoveAll(filepath.Join(home, "runs", "r1")))
	s, err = nodes.New(opts...)
	require.NoError(t, err)
	defer s.Close()
	_, err = resume(ctx, s, "r1")
	require.Error(t, err)
}
