package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/agiraph/agiraph/checkpoint/postgres"
	leases "github.com/agiraph/agiraph/internal/lease"
)

// Runner enqueues runs of registered graphs and, once started, executes the runs of every process
// on its database. It is safe for concurrent use.
type Runner struct {
	pool   *pgxpool.Pool
	owned  bool // Open made the pool: Close closes it
	saver  *postgres.Saver
	river  *river.Client[pgx.Tx]
	opts   options
	runs   *leases.Table // the threads' leases: this process's name in them, their TTL
	logger *slog.Logger

	mu      sync.RWMutex
	graphs  map[string]registered
	started bool

	stopWatch context.CancelFunc // stops the watchdog
	watching  sync.WaitGroup
}

// Option configures a Runner.
type Option func(*options)

type options struct {
	leaseTTL      time.Duration
	heartbeat     time.Duration
	watchInterval time.Duration
	pollInterval  time.Duration
	maxWorkers    int
	queue         string
	logger        *slog.Logger
}

// The defaults of the options: a dead process's threads are taken over within LeaseTTL plus
// WatchInterval plus the time River takes to start the new job (well under a second).
const (
	DefaultLeaseTTL      = 10 * time.Second
	DefaultHeartbeat     = 2 * time.Second
	DefaultWatchInterval = time.Second
	DefaultPollInterval  = 100 * time.Millisecond
	DefaultMaxWorkers    = 100
	DefaultQueue         = "agiraph"
)

// WithLease sets how long a lease lasts unless renewed (ttl) and how often the process running a
// thread renews it (heartbeat, less than ttl: a few renewals may fail before the lease is lost).
func WithLease(ttl, heartbeat time.Duration) Option {
	return func(o *options) { o.leaseTTL, o.heartbeat = ttl, heartbeat }
}

// WithWatchInterval sets how often the watchdog looks for expired leases.
func WithWatchInterval(d time.Duration) Option { return func(o *options) { o.watchInterval = d } }

// WithPollInterval sets how often Wait reads a thread's status.
func WithPollInterval(d time.Duration) Option { return func(o *options) { o.pollInterval = d } }

// WithMaxWorkers bounds how many runs this process executes at once.
func WithMaxWorkers(n int) Option { return func(o *options) { o.maxWorkers = n } }

// WithQueue names the River queue of the runs (default "agiraph"): Runners of one application
// share it; two applications on one database use two.
func WithQueue(name string) Option { return func(o *options) { o.queue = name } }

// WithLogger sets where the Runner and River log (default: nowhere).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Open connects to the PostgreSQL database at url through a pool of its own and makes a Runner on
// it (see New). Close closes the pool.
func Open(ctx context.Context, url string, opts ...Option) (*Runner, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("runner: open: %w", err)
	}
	r, err := New(ctx, pool, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	r.owned = true
	return r, nil
}

// New makes a Runner on a pool the caller owns: it brings River's schema, the checkpoint tables
// (checkpoint/postgres) and the runs table up to date. The Runner enqueues and reads runs at once;
// it executes runs once Start is called.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Runner, error) {
	o := options{
		leaseTTL: DefaultLeaseTTL, heartbeat: DefaultHeartbeat, watchInterval: DefaultWatchInterval,
		pollInterval: DefaultPollInterval, maxWorkers: DefaultMaxWorkers, queue: DefaultQueue,
		logger: slog.New(slog.DiscardHandler),
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.heartbeat <= 0 || o.leaseTTL <= o.heartbeat || o.watchInterval <= 0 || o.pollInterval <= 0 || o.maxWorkers < 1 {
		return nil, fmt.Errorf("runner: new: invalid options: lease %v renewed every %v, watch every %v, poll every %v, %d workers (want 0 < heartbeat < TTL, positive intervals, a worker at least)",
			o.leaseTTL, o.heartbeat, o.watchInterval, o.pollInterval, o.maxWorkers)
	}
	if err := migrate(ctx, pool, o.logger); err != nil {
		return nil, fmt.Errorf("runner: new: %w", err)
	}
	saver, err := postgres.New(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("runner: new: %w", err)
	}
	r := &Runner{
		pool: pool, saver: saver, opts: o, logger: o.logger, graphs: map[string]registered{},
		runs: &leases.Table{Name: runsTable, Key: "thread_id", Owner: leases.Owner(), TTL: o.leaseTTL},
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &worker{r: r})
	r.river, err = river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:  map[string]river.QueueConfig{o.queue: {MaxWorkers: o.maxWorkers}},
		Workers: workers,
		Logger:  o.logger,
		// No deadline for runs: a lease, not a time limit, tells a live run from a dead one.
		JobTimeout: -1,
	})
	if err != nil {
		_ = saver.Close() // the error before is the one to report
		return nil, fmt.Errorf("runner: new: %w", err)
	}
	return r, nil
}

// Owner is the name of this process in the leases it holds: host/pid/random.
func (r *Runner) Owner() string { return r.runs.Owner }

// Start makes this process execute runs: River starts fetching jobs, and the watchdog looks for
// threads whose process died. Register every graph before: a job of a graph this process does
// not know is retried later, by this process or another.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return errors.New("runner: start: already started")
	}
	if err := r.river.Start(ctx); err != nil {
		return fmt.Errorf("runner: start: %w", err)
	}
	r.started = true
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.stopWatch = cancel
	r.watching.Add(1)
	go r.watch(wctx)
	return nil
}

// Stop stops executing runs: no new job starts, and the runs in progress may finish until ctx is
// done; then they are cancelled and their threads handed over at once (queued again, for another
// process to resume from their last checkpoint). A Runner that was not started stops at once.
func (r *Runner) Stop(ctx context.Context) error {
	r.mu.Lock()
	started := r.started
	r.started = false
	r.mu.Unlock()
	if !started {
		return nil
	}
	err := r.river.Stop(ctx)
	if ctx.Err() != nil {
		err = r.river.StopAndCancel(context.WithoutCancel(ctx))
	}
	r.stopWatch()
	r.watching.Wait()
	if err != nil {
		return fmt.Errorf("runner: stop: %w", err)
	}
	return nil
}

// Close stops the Runner (cancelling the runs in progress, see Stop) and closes the pool when Open
// made it.
func (r *Runner) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := errors.Join(r.Stop(ctx), r.saver.Close())
	if r.owned {
		r.pool.Close()
	}
	return err
}
