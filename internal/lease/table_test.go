package lease_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/checkpoint"
	"github.com/agiraph/agiraph/checkpoint/postgres"
	"github.com/agiraph/agiraph/internal/lease"
	"github.com/agiraph/agiraph/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

// jobs is the table of the tests: a row per job, with its lease and columns of its user's.
const jobs = `CREATE TABLE jobs (
	name       text PRIMARY KEY,
	state      text NOT NULL DEFAULT 'new',
	note       text,
	owner      text,
	generation bigint NOT NULL DEFAULT 0,
	expires_at timestamptz
)`

// twoOwners makes the jobs table, with rows named by names, on a new database, and the Tables of
// two processes on it.
func twoOwners(t *testing.T, names ...string) (pool *pgxpool.Pool, a, b *lease.Table) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.Start(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pool.Exec(ctx, jobs)
	require.NoError(t, err)
	for _, name := range names {
		_, err = pool.Exec(ctx, `INSERT INTO jobs (name) VALUES ($1)`, name)
		require.NoError(t, err)
	}
	table := func(owner string) *lease.Table {
		return &lease.Table{Name: "jobs", Key: "name", Owner: owner, TTL: time.Minute}
	}
	return pool, table("a"), table("b")
}

// expire makes the lease of row name expire, as if its holder had died.
func expire(t *testing.T, pool *pgxpool.Pool, name string) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `UPDATE jobs SET expires_at = now() - interval '1 second' WHERE name = $1`, name)
	require.NoError(t, err)
}

// row reads the lease of row name and its note.
func row(t *testing.T, pool *pgxpool.Pool, name string) (owner *string, gen int64, note *string) {
	t.Helper()
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT owner, generation, note FROM jobs WHERE name = $1`, name).Scan(&owner, &gen, &note))
	return owner, gen, note
}

func TestTakeRenewRelease(t *testing.T) {
	ctx := context.Background()
	pool, a, _ := twoOwners(t, "j")

	gen, taken, err := a.Take(ctx, pool, "j", lease.Extra{Set: "state = $1", Args: []any{"running"}})
	require.NoError(t, err)
	require.True(t, taken)
	assert.Equal(t, int64(1), gen, "taking raises the generation")
	var state string
	var left time.Duration
	require.NoError(t, pool.QueryRow(ctx, `SELECT state, expires_at - now() FROM jobs WHERE name = 'j'`).Scan(&state, &left))
	assert.Equal(t, "running", state, "the user's columns are set with the lease")
	assert.Greater(t, left, 30*time.Second, "the lease lasts its TTL")

	held, err := a.Renew(ctx, pool, "j", gen)
	require.NoError(t, err)
	assert.True(t, held)
	wrote, err := a.Write(ctx, pool, a.Held("j", gen), lease.Extra{Set: "note = $1", Args: []any{"under the lease"}})
	require.NoError(t, err)
	assert.True(t, wrote)

	released, err := a.Release(ctx, pool, "j", gen, lease.Extra{Set: "state = $1", Where: "note = $2", Args: []any{"done", "under the lease"}})
	require.NoError(t, err)
	assert.True(t, released)
	owner, after, note := row(t, pool, "j")
	assert.Nil(t, owner, "released")
	assert.Equal(t, gen, after, "releasing keeps the generation")
	assert.Equal(t, "under the lease", *note)

	held, err = a.Renew(ctx, pool, "j", gen)
	require.NoError(t, err)
	assert.False(t, held, "a released lease is not renewed")
	wrote, err = a.Write(ctx, pool, a.Held("j", gen), lease.Extra{Set: "note = 'late'"})
	require.NoError(t, err)
	assert.False(t, wrote, "nor written under")
	released, err = a.Release(ctx, pool, "j", gen, lease.Extra{})
	require.NoError(t, err)
	assert.False(t, released, "nor released twice")

	gen, taken, err = a.Take(ctx, pool, "j", lease.Extra{})
	require.NoError(t, err)
	require.True(t, taken, "a released lease is free")
	assert.Equal(t, int64(2), gen)
	held, err = a.Renew(ctx, pool, "j", 1)
	require.NoError(t, err)
	assert.False(t, held, "the generation before is not held, though the owner is the same")
}

// A second owner cannot take a held lease, but takes an expired one, with a higher generation;
// the first owner then holds nothing.
func TestTakeover(t *testing.T) {
	ctx := context.Background()
	pool, a, b := twoOwners(t, "j")
	gen, taken, err := a.Take(ctx, pool, "j", lease.Extra{})
	require.NoError(t, err)
	require.True(t, taken)

	_, taken, err = b.Take(ctx, pool, "j", lease.Extra{})
	require.NoError(t, err)
	assert.False(t, taken, "held by a")
	_, taken, err = a.Take(ctx, pool, "j", lease.Extra{})
	require.NoError(t, err)
	assert.False(t, taken, "held by a, not taken again")

	expire(t, pool, "j")
	_, taken, err = b.Take(ctx, pool, "j", lease.Extra{Where: "state = $1", Args: []any{"done"}})
	require.NoError(t, err)
	assert.False(t, taken, "the user's condition does not hold")
	newGen, taken, err := b.Take(ctx, pool, "j", lease.Extra{Where: "state = $1", Args: []any{"new"}})
	require.NoError(t, err)
	require.True(t, taken, "expired")
	assert.Greater(t, newGen, gen)

	held, err := a.Renew(ctx, pool, "j", gen)
	require.NoError(t, err)
	assert.False(t, held, "a lost the lease")
	released, err := a.Release(ctx, pool, "j", gen, lease.Extra{})
	require.NoError(t, err)
	assert.False(t, released, "a cannot end b's lease")
	owner, _, _ := row(t, pool, "j")
	assert.Equal(t, "b", *owner)

	_, taken, err = a.Take(ctx, pool, "missing", lease.Extra{})
	require.NoError(t, err)
	assert.False(t, taken, "no such row")
}

// A write fenced by the lease is made while its holder holds it, and refused after a takeover,
// in a statement of the user's (Write) as in a fenced saver's.
func TestFencedWriteAfterTakeover(t *testing.T) {
	ctx := context.Background()
	pool, a, b := twoOwners(t, "j")
	saver, err := postgres.New(ctx, pool)
	require.NoError(t, err)
	gen, taken, err := a.Take(ctx, pool, "j", lease.Extra{})
	require.NoError(t, err)
	require.True(t, taken)
	fenced := saver.Fenced(a.Fence(a.Held("j", gen)))
	cfg := checkpoint.Config{ThreadID: "j"}
	put := func(id string) error {
		_, err := fenced.Put(ctx, cfg, checkpoint.Checkpoint{ID: id, Format: 1})
		return err
	}
	require.NoError(t, put("c1"), "a holds the lease")

	expire(t, pool, "j")
	_, taken, err = b.Take(ctx, pool, "j", lease.Extra{})
	require.NoError(t, err)
	require.True(t, taken)
	assert.ErrorIs(t, put("c2"), postgres.ErrFenced)
	wrote, err := a.Write(ctx, pool, a.Held("j", gen), lease.Extra{Set: "note = 'zombie'"})
	require.NoError(t, err)
	assert.False(t, wrote)
	got, err := saver.Get(ctx, cfg)
	require.NoError(t, err)
	assert.Equal(t, "c1", got.Checkpoint.ID)
	_, _, note := row(t, pool, "j")
	assert.Nil(t, note)

	// Ours: no other process holds the row, whatever the generation.
	wrote, err = b.Write(ctx, pool, b.Ours("j"), lease.Extra{Set: "note = 'b'"})
	require.NoError(t, err)
	assert.True(t, wrote)
	wrote, err = a.Write(ctx, pool, a.Ours("j"), lease.Extra{Set: "note = 'a'"})
	require.NoError(t, err)
	assert.False(t, wrote, "b holds it")
}

// Find lists the rows by a condition on their leases, Claim ends the expired ones.
func TestFindAndClaim(t *testing.T) {
	ctx := context.Background()
	pool, a, b := twoOwners(t, "held", "expired", "free", "other")
	gens := map[string]int64{}
	for _, name := range []string{"held", "expired", "other"} {
		gen, taken, err := a.Take(ctx, pool, name, lease.Extra{Set: "note = $1", Args: []any{"by a"}})
		require.NoError(t, err)
		require.True(t, taken)
		gens[name] = gen
	}
	expire(t, pool, "expired")
	expire(t, pool, "other")
	_, err := pool.Exec(ctx, `UPDATE jobs SET state = 'skip' WHERE name = 'other'`)
	require.NoError(t, err)

	names := func(rows pgx.Rows, err error) []string {
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return got
	}
	assert.Equal(t, []string{"expired", "free", "other"}, names(b.Find(ctx, pool, "name", b.Free(), lease.Extra{})))
	assert.Equal(t, []string{"expired", "free"}, names(b.Find(ctx, pool, "name", b.Free(), lease.Extra{Where: "state <> $1", Args: []any{"skip"}})))
	assert.Equal(t, []string{"held"}, names(b.Find(ctx, pool, "name", b.Others("held"), lease.Extra{})))
	assert.Empty(t, names(a.Find(ctx, pool, "name", a.Others("held"), lease.Extra{})), "a's own")
	assert.Empty(t, names(b.Find(ctx, pool, "name", b.Others("expired"), lease.Extra{})), "expired")

	// A row another transaction has locked is skipped.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SELECT 1 FROM jobs WHERE name = 'free' FOR UPDATE`)
	require.NoError(t, err)

	rows, err := b.Claim(ctx, pool, lease.Extra{Set: "state = $2", Where: "state <> $1", Args: []any{"skip", "claimed"}}, []string{"note", "owner"}, 10)
	require.NoError(t, err)
	type claimed struct {
		name        string
		gen         int64
		note, owner *string
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (claimed, error) {
		var c claimed
		return c, r.Scan(&c.name, &c.gen, &c.note, &c.owner)
	})
	require.NoError(t, err)
	require.Len(t, got, 1, "the held row, the skipped one and the locked one are not claimed")
	assert.Equal(t, "expired", got[0].name)
	assert.Equal(t, gens["expired"]+1, got[0].gen, "claiming raises the generation")
	assert.Equal(t, "by a", *got[0].note, "columns as they were")
	assert.Equal(t, "a", *got[0].owner)
	owner, gen, _ := row(t, pool, "expired")
	assert.Nil(t, owner, "claimed: no process holds it")
	assert.Equal(t, gens["expired"]+1, gen)
	held, err := a.Renew(ctx, pool, "expired", gens["expired"])
	require.NoError(t, err)
	assert.False(t, held, "the former holder lost it")
	held, err = a.Renew(ctx, pool, "held", gens["held"])
	require.NoError(t, err)
	assert.True(t, held)
	require.NoError(t, tx.Rollback(ctx))

	rows, err = b.Claim(ctx, pool, lease.Extra{}, nil, 1)
	require.NoError(t, err)
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var name string
		var gen int64
		return name, r.Scan(&name, &gen)
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"expired"}, keys, "up to the limit, by key")
}

// A write that sets nothing is refused with an error that names the table.
func TestWriteSetsNothing(t *testing.T) {
	ctx := context.Background()
	pool, a, _ := twoOwners(t, "j")
	_, err := a.Write(ctx, pool, a.Held("j", 1), lease.Extra{})
	assert.ErrorContains(t, err, "jobs")
}
