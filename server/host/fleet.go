package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agiraph/agiraph/checkpoint/postgres"
	"github.com/agiraph/agiraph/internal/lease"
	"github.com/agiraph/agiraph/nodes/store/pgstore"
)

// The defaults of a fleet's lease (see [WithLease]): a replica that dies mid-run has its runs
// taken over within DefaultLeaseTTL plus DefaultWatchInterval.
const (
	DefaultLeaseTTL      = 10 * time.Second
	DefaultHeartbeat     = 2 * time.Second
	DefaultWatchInterval = time.Second
)

// WithPostgres makes the host a replica of a fleet on the PostgreSQL database at url (see
// docs/fleet.md, "Replicas"): its agents' registry, leases and checkpoints live there, and
// their folders under the root, which every replica of the fleet shares.
func WithPostgres(url string) Option { return func(c *config) { c.pgURL = url } }

// WithPostgresPool is WithPostgres on a pool the caller owns (Close leaves it open).
func WithPostgresPool(pool *pgxpool.Pool) Option { return func(c *config) { c.pgPool = pool } }

// WithLease sets, for a replica, how long an agent's lease lasts unless renewed (ttl, default
// [DefaultLeaseTTL]), how often the replica holding it renews it (heartbeat, less than ttl;
// default [DefaultHeartbeat]), and how often the replica looks for runs whose replica stopped
// renewing their lease (watch, default [DefaultWatchInterval]). Zero keeps a default.
func WithLease(ttl, heartbeat, watch time.Duration) Option {
	return func(c *config) { c.leaseTTL, c.heartbeat, c.watch = ttl, heartbeat, watch }
}

// agentsTable is the fleet's registry of agents and their leases; fleetLock is the key of the
// advisory lock under which replicas create it ("agsv" and 1).
const (
	agentsTable = "agiraph_server_agents"
	fleetLock   = 0x6167737600000001
)

// schema makes the registry: one row per agent, with the lease of the replica that holds the
// agent (owner, base_url, generation, expires_at), its run in progress, if any, and its meta.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS ` + agentsTable + ` (
		id         text COLLATE "C" PRIMARY KEY,
		deleted    boolean NOT NULL DEFAULT false,
		created_at timestamptz NOT NULL DEFAULT now(),
		run        text,             -- the run in progress: resumed by another replica should its owner die
		owner      text,             -- the replica holding the lease
		base_url   text,             -- where the owner serves the API
		generation bigint NOT NULL DEFAULT 0, -- raised by every taking of the lease
		expires_at timestamptz,      -- when the lease ends unless renewed
		meta       jsonb             -- what the host keeps of the agent (host.meta)
	)`,
	`ALTER TABLE ` + agentsTable + ` ADD COLUMN IF NOT EXISTS meta jsonb`, // a registry made before it kept meta
	`CREATE INDEX IF NOT EXISTS agiraph_server_agents_runs ON ` + agentsTable + ` (expires_at) WHERE run IS NOT NULL AND NOT deleted`,
}

// fleet is a replica's side of the database its fleet shares.
type fleet struct {
	pool      *pgxpool.Pool
	owned     bool            // the host opened the pool
	db        *pgstore.DB     // the agents' stores
	saver     *postgres.Saver // db's
	leases    *lease.Table    // the agents' leases: this replica's name in them, their TTL
	url       string          // its base URL
	heartbeat time.Duration
	watch     time.Duration
}

// openFleet connects the host to its fleet's database, if it is given one.
func openFleet(ctx context.Context, c config) (*fleet, error) {
	if c.pgURL == "" && c.pgPool == nil {
		return nil, nil
	}
	f := &fleet{pool: c.pgPool, url: c.baseURL,
		leases:    &lease.Table{Name: agentsTable, Key: "id", Owner: lease.Owner(), TTL: cmp.Or(c.leaseTTL, DefaultLeaseTTL)},
		heartbeat: cmp.Or(c.heartbeat, DefaultHeartbeat), watch: cmp.Or(c.watch, DefaultWatchInterval)}
	if f.heartbeat <= 0 || f.heartbeat >= f.leases.TTL || f.watch <= 0 {
		return nil, fmt.Errorf("host: a lease of %v renewed every %v, watched every %v (want 0 < heartbeat < TTL, a positive watch)", f.leases.TTL, f.heartbeat, f.watch)
	}
	if f.pool == nil {
		pool, err := pgxpool.New(ctx, c.pgURL)
		if err != nil {
			return nil, fmt.Errorf("host: %w", err)
		}
		f.pool, f.owned = pool, true
	}
	err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(fleetLock)); err != nil {
			return err
		}
		for _, stmt := range schema {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		if f.db, err = pgstore.New(ctx, f.pool); err == nil {
			f.saver = f.db.Saver()
		}
	}
	if err != nil {
		_ = f.close() // the error before is the one to report
		return nil, fmt.Errorf("host: the fleet's database: %w", err)
	}
	return f, nil
}

// close closes the saver, and the pool if the host opened it.
func (f *fleet) close() error {
	var err error
	if f.db != nil {
		err = f.db.Close()
	}
	if f.owned {
		f.pool.Close()
	}
	return err
}

// dbTimeout bounds a statement of the fleet's that no request's context bounds.
const dbTimeout = 10 * time.Second

func bg() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), dbTimeout)
}

// register adds agent id to the registry; false when it is there already (even deleted).
func (f *fleet) register(id string) (bool, error) {
	ctx, cancel := bg()
	defer cancel()
	tag, err := f.pool.Exec(ctx, `INSERT INTO `+agentsTable+` (id) VALUES ($1) ON CONFLICT (id) DO NOTHING`, id)
	return tag.RowsAffected() == 1, err
}

// unregister removes agent id, whose creation failed, from the registry, as if it had never
// been made.
func (f *fleet) unregister(id string) error {
	ctx, cancel := bg()
	defer cancel()
	_, err := f.pool.Exec(ctx, `DELETE FROM `+agentsTable+` WHERE id = $1`, id)
	return err
}

// forget marks agent id deleted.
func (f *fleet) forget(id string) error {
	ctx, cancel := bg()
	defer cancel()
	_, err := f.pool.Exec(ctx, `UPDATE `+agentsTable+` SET deleted = true, run = NULL WHERE id = $1`, id)
	return err
}

// ids returns the agents of the registry, but the deleted.
func (f *fleet) ids(ctx context.Context) ([]string, error) {
	rows, err := f.pool.Query(ctx, `SELECT id FROM `+agentsTable+` WHERE NOT deleted ORDER BY id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// listed reports whether agent id is in the registry and not deleted.
func (f *fleet) listed(ctx context.Context, id string) (bool, error) {
	var ok bool
	err := f.pool.QueryRow(ctx, `SELECT true FROM `+agentsTable+` WHERE id = $1 AND NOT deleted`, id).Scan(&ok)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return ok, err
}

// meta returns the meta of agent id: fs.ErrNotExist when the registry has none (the agent is not
// there, or its creation has not written it yet).
func (f *fleet) meta(id string) (meta, error) {
	ctx, cancel := bg()
	defer cancel()
	var m meta
	var raw []byte
	err := f.pool.QueryRow(ctx, `SELECT meta FROM `+agentsTable+` WHERE id = $1`, id).Scan(&raw)
	switch {
	case errors.Is(err, pgx.ErrNoRows) || err == nil && raw == nil:
		return m, fmt.Errorf("agent %q: no meta in the fleet's registry: %w", id, fs.ErrNotExist)
	case err != nil:
		return m, err
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("agent %q: its meta in the fleet's registry is damaged: %w", id, err)
	}
	return m, nil
}

// setMeta writes the meta of agent id, unless another replica holds the agent (errLeased).
func (f *fleet) setMeta(id string, m meta) error {
	ctx, cancel := bg()
	defer cancel()
	ok, err := f.leases.Write(ctx, f.pool, f.leases.Ours(id), lease.Extra{Set: "meta = $1", Args: []any{m}})
	if err == nil && !ok {
		err = fmt.Errorf("agent %q: its meta is not written here: %w", id, errLeased)
	}
	return err
}

// errLeased is the refusal to take an agent's lease that another replica holds.
var errLeased = ErrElsewhere

// take takes the lease of agent id for this replica, when no replica holds it or its holder's
// expired, and returns its generation.
func (f *fleet) take(id string) (int64, error) {
	ctx, cancel := bg()
	defer cancel()
	gen, ok, err := f.leases.Take(ctx, f.pool, id, lease.Extra{Set: "base_url = $1", Where: "NOT deleted", Args: []any{f.url}})
	if err == nil && !ok {
		return 0, fmt.Errorf("agent %q: %w", id, errLeased)
	}
	return gen, err
}

// setRun records the run in progress of agent id under this replica's lease gen ("": none).
func (f *fleet) setRun(id string, gen int64, run string) error {
	ctx, cancel := bg()
	defer cancel()
	_, err := f.leases.Write(ctx, f.pool, f.leases.Held(id, gen), lease.Extra{Set: "run = nullif($1, '')", Args: []any{run}})
	return err
}

// drop ends this replica's lease gen of agent id.
func (f *fleet) drop(id string, gen int64) error {
	ctx, cancel := bg()
	defer cancel()
	_, err := f.leases.Release(ctx, f.pool, id, gen, lease.Extra{Set: "base_url = NULL"})
	return err
}

// holder returns the base URL of the replica other than this one that holds agent id's lease;
// "" when none does (or it did not say where it serves).
func (f *fleet) holder(ctx context.Context, id string) (string, error) {
	rows, err := f.leases.Find(ctx, f.pool, "coalesce(base_url, '')", f.leases.Others(id), lease.Extra{})
	if err != nil {
		return "", err
	}
	u, err := pgx.CollectOneRow(rows, pgx.RowTo[string])
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return u, err
}

// orphan is a run in progress that no replica holds: its replica died, or closed and handed it over.
type orphan struct{ id, run string }

// orphans returns the runs in progress whose lease no replica holds.
func (f *fleet) orphans(ctx context.Context) ([]orphan, error) {
	rows, err := f.leases.Find(ctx, f.pool, "id, run", f.leases.Free(), lease.Extra{Where: "run IS NOT NULL AND NOT deleted"})
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (orphan, error) {
		var o orphan
		return o, r.Scan(&o.id, &o.run)
	})
}

// hold holds the agent's lease, taking it if this replica does not hold it yet, until the
// matching unhold; errLeased when another replica holds it. Without a fleet it does nothing.
// While held, a heartbeat renews it; should it be lost, the run in progress is cancelled.
func (a *Agent) hold() error {
	f := a.host.fleet
	if f == nil {
		return nil
	}
	a.leaseMu.Lock()
	if a.leaseRefs > 0 {
		a.leaseRefs++
		a.leaseMu.Unlock()
		return nil
	}
	taken := time.Now()
	gen, err := f.take(a.id)
	if err != nil {
		a.leaseMu.Unlock()
		return err
	}
	a.leaseRefs, a.leaseGen = 1, gen
	a.leaseLost.Store(false)
	renew := func(ctx context.Context) (bool, error) { return f.leases.Renew(ctx, f.pool, a.id, gen) }
	a.keepStop = lease.Keep(context.Background(), taken.Add(f.leases.TTL), f.leases.TTL, f.heartbeat, renew, a.loseLease, a.log)
	a.leaseMu.Unlock()
	a.reload() // the agent's files as the replica that held it last left them
	return nil
}

// unhold lets the lease go: the last holder ends it, unless it was lost.
func (a *Agent) unhold() {
	f := a.host.fleet
	if f == nil {
		return
	}
	a.leaseMu.Lock()
	defer a.leaseMu.Unlock()
	if a.leaseRefs--; a.leaseRefs > 0 {
		return
	}
	a.keepStop()
	if !a.leaseLost.Load() {
		if err := f.drop(a.id, a.leaseGen); err != nil {
			a.log.Error("cannot end the agent's lease: another replica takes the agent when it expires", "err", err)
		}
	}
}

// loseLease stops the run in progress, whose lease was lost (err): another replica may take it.
func (a *Agent) loseLease(err error) {
	a.log.Warn("the agent's lease was lost; its run stops here", "err", err)
	a.leaseLost.Store(true)
	a.mu.Lock()
	cancel := a.cancel
	running := a.running
	a.mu.Unlock()
	if running {
		cancel()
	}
}

// lost reports whether the agent's lease was lost since it was last taken.
func (a *Agent) lost() bool { return a.leaseLost.Load() }

// held reports whether this replica holds the agent's lease (always, without a fleet).
func (a *Agent) held() bool {
	if a.host.fleet == nil {
		return true
	}
	a.leaseMu.Lock()
	defer a.leaseMu.Unlock()
	return a.leaseRefs > 0 && !a.leaseLost.Load()
}

// markRun records run as the agent's run in progress in the registry ("": none), under the
// lease this replica holds; the caller holds a.mu or is the run's goroutine.
func (a *Agent) markRun(run string) {
	f := a.host.fleet
	if f == nil {
		return
	}
	a.leaseMu.Lock()
	gen, lost := a.leaseGen, a.leaseLost.Load()
	a.leaseMu.Unlock()
	if lost {
		return
	}
	if err := f.setRun(a.id, gen, run); err != nil {
		a.log.Error("cannot record the run in progress in the registry", "run", run, "err", err)
	}
}

// reload reads the agent's meta again, which another replica may have written, unless a run of
// this replica is in progress; a changed one drops what was read of the last run.
func (a *Agent) reload() {
	m, err := a.host.readMeta(a.id)
	if err != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running || a.damaged != "" || m.Updated.Equal(a.meta.Updated) && m.Status == a.meta.Status {
		return
	}
	m.ID = a.id
	a.meta, a.ended = m, nil
	a.starts++
}

// watchFleet is a replica's watchdog: every watch interval, it takes over the runs in progress
// whose replica stopped renewing their lease (or handed them over as it closed), and resumes
// them here.
func (h *Host) watchFleet() {
	defer h.wg.Done()
	t := time.NewTicker(h.fleet.watch)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		runs, err := h.fleet.orphans(h.ctx)
		if err != nil {
			if h.ctx.Err() == nil {
				h.cfg.logger.Warn("watchdog", "err", err)
			}
			continue
		}
		for _, o := range runs {
			a := h.takeUp(o.id) // orphans lists agents not deleted: no need to ask the registry again
			if a == nil {
				continue
			}
			_, err := h.start(a, "", o.run, true)
			switch {
			case err == nil:
				h.cfg.logger.Info("took over a run whose replica stopped", "agent", o.id, "run", o.run)
			case !errors.Is(err, errLeased) && !errors.Is(err, ErrBusy):
				h.cfg.logger.Warn("cannot take over a run", "agent", o.id, "run", o.run, "err", err)
			}
		}
	}
}

// sync brings the host's agents in line with the registry: it takes up those another replica
// created, and forgets those another deleted.
func (h *Host) sync(ctx context.Context) error {
	ids, err := h.fleet.ids(ctx)
	if err != nil {
		return err
	}
	listed := map[string]bool{}
	for _, id := range ids {
		listed[id] = true
		h.takeUp(id)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, a := range h.agents {
		a.mu.Lock()
		idle := !a.running
		a.mu.Unlock()
		if !listed[id] && idle && isClosed(a.ready) { // not one being created here
			delete(h.agents, id)
		}
	}
	return nil
}

// isClosed reports whether c is closed.
func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// takeUp adds agent id of the registry to the host, from its folder, if it is not there.
func (h *Host) takeUp(id string) *Agent {
	h.mu.Lock()
	a, ok := h.agents[id]
	h.mu.Unlock()
	if ok {
		return a
	}
	a, at := h.load(id)
	if a == nil {
		return nil
	}
	if !at.IsZero() {
		a.alarm.Set(a.id, at)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if prev, ok := h.agents[id]; ok {
		return prev
	}
	h.agents[id] = a
	return a
}

// Holder returns the base URL of the replica of the fleet, other than this one, that holds agent
// id (see [WithBaseURL]): the calls on its run are for that replica to answer. "" when this host
// holds it, when no replica does, or outside a fleet.
func (h *Host) Holder(ctx context.Context, id string) (string, error) {
	if h.fleet == nil {
		return "", nil
	}
	h.mu.Lock()
	a := h.agents[id]
	h.mu.Unlock()
	if a != nil && a.held() {
		return "", nil
	}
	u, err := h.fleet.holder(ctx, id)
	if err != nil {
		return "", mark(ErrUnavailable, fmt.Errorf("agent %q: the fleet's database: %w", id, err))
	}
	return u, nil
}

// agentStore is the store of agent id's squad in the fleet: its rows and threads apart from the
// other agents', its writes fenced by the agent's lease — refused while another replica holds it
// — so that a replica that lost the agent, and whose run goes on for a moment, cannot write after
// another took it over.
func (f *fleet) agentStore(id string) (*pgstore.Store, error) {
	fenced := f.saver.Fenced(f.leases.Fence(f.leases.Ours(id)))
	return f.db.Agent(id, fenced)
}
