package pgtest_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

// TestStart: each call gives a new, empty database of its own on one cluster, which the URL
// reaches with the password it carries, and which runs with the server's fsync on.
func TestStart(t *testing.T) {
	ctx := context.Background()
	urls := []string{pgtest.Start(t), pgtest.Start(t)}
	require.NotEqual(t, urls[0], urls[1])
	var names []string
	for _, u := range urls {
		conn, err := pgx.Connect(ctx, u)
		require.NoError(t, err)
		defer conn.Close(ctx)
		var name, fsync string
		var tables int
		require.NoError(t, conn.QueryRow(ctx, `SELECT current_database(), current_setting('fsync'),
			(SELECT count(*) FROM pg_tables WHERE schemaname = 'public')`).Scan(&name, &fsync, &tables))
		assert.Equal(t, "on", fsync)
		assert.Zero(t, tables, "a new database has no tables")
		_, err = conn.Exec(ctx, `CREATE TABLE mine (x int)`)
		require.NoError(t, err)
		names = append(names, name)
	}
	assert.NotEqual(t, names[0], names[1])

	cfg, err := pgx.ParseConfig(urls[0])
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", cfg.Host, "the cluster listens on the loopback address")
	cfg.Password = "wrong"
	_, err = pgx.ConnectConfig(ctx, cfg)
	assert.Error(t, err, "a wrong password is refused")
}
