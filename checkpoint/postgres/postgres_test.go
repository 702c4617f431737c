package postgres_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/checkpointtest"
	"github.com/agiraph/agiraph/checkpoint/postgres"
	"github.com/agiraph/agiraph/internal/pgtest"
)

// TestMain runs this binary as a child process of a test when the environment says so (see
// process_test.go), and runs the tests otherwise.
func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		if err := child(role, os.Getenv(urlEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(pgtest.Run(m))
}

// open opens a Saver on url, closed when the test ends.
func open(t testing.TB, url string, opts ...postgres.Option) *postgres.Saver {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// TestConformance: the Saver passes the checkpoint.Saver conformance suite, each property on a new
// database.
func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver { return open(t, pgtest.Start(t)) })
}

func cp(id string, step int) checkpoint.Checkpoint {
	return checkpoint.Checkpoint{
		ID: id, Step: step, Source: checkpoint.SourceLoop, RunID: "run-1", State: []byte("state"),
		Next:  []checkpoint.Task{{ID: "0", Node: "agent"}, {ID: "1", Node: "tool", Arg: []byte(`{"q":1}`), Push: true}},
		Joins: map[string][]string{"j": {"a"}},
		Meta:  map[string]string{"step": fmt.Sprint(step)},
	}
}

func upd(task, value string) checkpoint.Write {
	return checkpoint.Write{TaskID: task, Node: "node-" + task, Kind: checkpoint.WriteUpdate, Value: []byte(value)}
}

// TestOpenErrors: a URL that does not parse, a server that does not answer and a cancelled context
// are errors that say so, and never show the password.
func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	_, err := postgres.Open(ctx, "postgres://me:secret@127.0.0.1:notaport/db")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "checkpoint/postgres: open")
	assert.NotContains(t, err.Error(), "secret")

	// A port of this machine on which nothing listens.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	_, err = postgres.Open(ctx, fmt.Sprintf("postgres://me:secret@127.0.0.1:%d/db?connect_timeout=5", port))
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("me@127.0.0.1:%d/db", port), "the error names the database")
	assert.NotContains(t, err.Error(), "secret")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = postgres.Open(cancelled, pgtest.Start(t))
	assert.ErrorIs(t, err, context.Canceled)

	_, err = postgres.New(ctx, nil)
	assert.Error(t, err)
}

// TestCorruptRows: a row whose encoded columns were damaged behind the Saver's back makes Get and
// List fail with a *CorruptError naming the thread, the namespace, the checkpoint and the column,
// never a panic; other checkpoints stay readable.
func TestCorruptRows(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		column, damage string
	}{
		{"next", `'garbage'`},
		{"next", `'\x0105'`},                     // more tasks than bytes
		{"next", `next || '\x00'::bytea`},        // trailing bytes
		{"next", `substring(next from 1 for 5)`}, // truncated
		{"joins", `'\x02'`},                      // unknown version
		{"meta", `'\x0105'`},
	} {
		t.Run(tc.column+" = "+tc.damage, func(t *testing.T) {
			url := pgtest.Start(t)
			s := open(t, url)
			cfg := checkpoint.Config{ThreadID: "thread-x", NS: "ns-y"}
			for i, id := range []string{"c1", "c2", "c3"} {
				at, err := s.Put(ctx, cfg, cp(id, i))
				require.NoError(t, err)
				require.NoError(t, s.PutWrites(ctx, at, []checkpoint.Write{upd("0", "a"), upd("1", "b")}))
			}
			conn, err := pgx.Connect(ctx, url)
			require.NoError(t, err)
			_, err = conn.Exec(ctx, "UPDATE agiraph_checkpoints SET "+tc.column+" = "+tc.damage+" WHERE id = 'c2'")
			require.NoError(t, err)
			conn.Close(ctx)

			check := func(what string, err error) {
				t.Helper()
				var ce *postgres.CorruptError
				require.ErrorAs(t, err, &ce, what)
				assert.Equal(t, "thread-x", ce.ThreadID, what)
				assert.Equal(t, "ns-y", ce.NS, what)
				assert.Equal(t, "c2", ce.CheckpointID, what)
				assert.Equal(t, "agiraph_checkpoints."+tc.column, ce.Column, what)
				for _, part := range []string{"checkpoint/postgres", "thread-x", "c2", ce.Column} {
					assert.Contains(t, err.Error(), part, what)
				}
			}
			_, err = s.Get(ctx, checkpoint.Config{ThreadID: "thread-x", NS: "ns-y", CheckpointID: "c2"})
			check("get c2", err)
			_, err = s.List(ctx, cfg, checkpoint.ListOptions{})
			check("list", err)
			for _, id := range []string{"c1", "c3", ""} {
				_, err := s.Get(ctx, checkpoint.Config{ThreadID: "thread-x", NS: "ns-y", CheckpointID: id})
				assert.NoError(t, err, "get %q next to the damaged row", id)
			}
			l, err := s.List(ctx, cfg, checkpoint.ListOptions{Limit: 1})
			assert.NoError(t, err)
			assert.Len(t, l, 1)
		})
	}
}

// TestClosedSaver: calls after Close fail instead of panicking, Close twice is harmless, and a
// Saver made by New leaves the caller's pool open.
func TestClosedSaver(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer pool.Close()
	for _, make := range []func() (*postgres.Saver, error){
		func() (*postgres.Saver, error) { return postgres.Open(ctx, url) },
		func() (*postgres.Saver, error) { return postgres.New(ctx, pool) },
	} {
		s, err := make()
		require.NoError(t, err)
		require.NoError(t, s.Close())
		require.NoError(t, s.Close())
		cfg := checkpoint.Config{ThreadID: "t", CheckpointID: "c1"}
		_, err = s.Put(ctx, cfg, cp("c1", 0))
		assert.ErrorContains(t, err, "closed")
		assert.ErrorContains(t, s.PutWrites(ctx, cfg, []checkpoint.Write{upd("0", "x")}), "closed")
		_, err = s.Get(ctx, cfg)
		assert.ErrorContains(t, err, "closed")
		_, err = s.List(ctx, cfg, checkpoint.ListOptions{})
		assert.ErrorContains(t, err, "closed")
		assert.ErrorContains(t, s.DeleteThread(ctx, "t"), "closed")
	}
	require.NoError(t, pool.Ping(ctx), "the caller's pool is still open")
}

// TestConcurrentFirstOpen: several Savers opening a new database at once all succeed, and the
// schema is created once.
func TestConcurrentFirstOpen(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	const n = 6
	savers := make([]*postgres.Saver, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { savers[i], errs[i] = postgres.Open(ctx, url) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "open %d", i)
		defer savers[i].Close()
		_, err := savers[i].Put(ctx, checkpoint.Config{ThreadID: "t"}, cp(fmt.Sprint("c", i), i))
		require.NoError(t, err)
	}
	l, err := savers[0].List(ctx, checkpoint.Config{ThreadID: "t"}, checkpoint.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, l, n)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var versions int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM agiraph_checkpoint_schema`).Scan(&versions))
	assert.Equal(t, 1, versions)
}
