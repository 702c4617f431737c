// Package postgres is a checkpoint.Saver that keeps checkpoints in a PostgreSQL database, through
// pgx (github.com/jackc/pgx/v5) and its connection pool. It is the saver for runs spread over
// several processes or machines; checkpoint/sqlite stays the zero-setup default for one machine.
//
//	saver, err := postgres.Open(ctx, "postgres://agiraph:secret@db.internal:5432/agiraph")
//	if err != nil {
//		return err
//	}
//	defer saver.Close()
//
// [New] makes a Saver on a *pgxpool.Pool the application already has. Any number of Savers may
// share one database and one thread. [Saver.Fenced] makes writes depend on a row of the
// caller's, such as a lease; [WithEffects] and [Saver.Write] commit an application's own tables
// with the checkpoints.
//
// Concurrency, durability, storage and the schema's migrations are in docs/checkpoints.md
// (PostgreSQL).
package postgres
