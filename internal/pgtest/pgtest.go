// Package pgtest gives tests a PostgreSQL database of their own, on a private cluster that the test
// binary starts on first use and stops when it ends.
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }
//
//	func TestSomething(t *testing.T) {
//		url := pgtest.Start(t) // a new, empty database
//		...
//	}
//
// The cluster is made with Debian's PostgreSQL programs (package postgresql): initdb and postgres
// from the folder named by AGIRAPH_PG_BIN, or else the newest /usr/lib/postgresql/*/bin, or else
// the folder of initdb on the PATH. It lives in a new temporary folder (data, Unix socket, log),
// listens on a free port of 127.0.0.1 only, and takes a password made for it, so that other local
// users cannot use it. PostgreSQL refuses to run as root: a test binary running as root runs the
// cluster as the system user postgres (which the Debian package creates), or nobody. Its settings
// are PostgreSQL's defaults, fsync included, so that benchmarks measure durable commits.
//
// Run stops the cluster (a fast shutdown) and removes its folder when the tests end, whether they
// passed or not; should the test binary die without that (a panic, a signal), the kernel stops the
// server with it (Linux's parent-death signal), and only the folder is left behind.
//
// Under -short, Start skips the test. Where PostgreSQL is not installed, Start skips the test and
// says how to install it — unless the environment variable CI is set, where it fails the test: CI
// installs PostgreSQL (.ci/run), so its absence there is a fault, not a reason to skip. Other
// platforms than Linux skip likewise (internal/testenv).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agiraph/agiraph/internal/testenv"
)

// BinEnv names the environment variable that may name the folder of initdb and postgres.
const BinEnv = "AGIRAPH_PG_BIN"

// user is the name of the cluster's superuser, whom the URLs of Start connect as.
const superuser = "agiraph"

// startTimeout bounds the wait for a new cluster to accept connections: a bound on a setup step
// that is normally done in a second, not a measure of speed.
const startTimeout = 2 * time.Minute

var (
	running   atomic.Bool // Run is running the tests
	once      sync.Once
	shared    *cluster
	sharedErr error // why there is no cluster
	databases atomic.Int64
)

// errUnavailable is wrapped by the error of a start where no cluster can be started here: tests
// skip for it, except under CI.
var errUnavailable = errors.New("pgtest: no PostgreSQL for the tests")

// Run runs the tests of m and then stops the cluster, if a test started one, and removes its
// folder. It returns m.Run's exit code; TestMain passes it to os.Exit.
func Run(m *testing.M) int {
	running.Store(true)
	code := m.Run()
	if shared != nil {
		if err := shared.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Start returns the URL of a new, empty database on the test binary's cluster, starting the cluster
// on the first call; the database is dropped when the test ends, after the test's own cleanups
// (connections still open are closed by the server). It skips the test under -short, and when
// PostgreSQL is not installed, where it fails it instead when the environment variable CI is set. The test binary's
// TestMain must call Run.
func Start(t testing.TB) string {
	t.Helper()
	if !running.Load() {
		t.Fatal("pgtest: TestMain must run the tests with pgtest.Run, which stops the cluster at the end")
	}
	testenv.Need(t, "PostgreSQL")
	once.Do(func() { shared, sharedErr = start() })
	if sharedErr != nil {
		if errors.Is(sharedErr, errUnavailable) {
			testenv.Missing(t, sharedErr.Error())
		}
		t.Fatal(sharedErr)
	}
	name := fmt.Sprintf("test_%d", databases.Add(1))
	ctx := context.Background()
	if err := shared.exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := shared.exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return shared.url(name)
}

// cluster is a running PostgreSQL server and its folder.
type cluster struct {
	dir      string
	port     int
	password string
	server   *exec.Cmd
	exited   chan struct{} // closed when the server has exited
	release  func()        // lets go of the thread that started the server
}

func (c *cluster) url(database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(superuser, c.password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// exec runs a statement in the cluster's postgres database.
func (c *cluster) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// binDir finds the folder of initdb and postgres.
func binDir() (string, error) {
	var candidates []string
	if dir := os.Getenv(BinEnv); dir != "" {
		candidates = append(candidates, dir)
	}
	versions, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(versions, func(a, b string) int { // newest first: 15 before 9.6
		va, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(a)), 64)
		vb, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(b)), 64)
		return -compareFloat(va, vb)
	})
	candidates = append(candidates, versions...)
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		candidates = append(candidates, filepath.Dir(p))
	}
	for _, dir := range candidates {
		if isFile(filepath.Join(dir, "initdb")) && isFile(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%w: PostgreSQL is not installed (apt-get install postgresql, or set %s to the folder of initdb and postgres)", errUnavailable, BinEnv)
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// start makes a cluster in a new folder and starts its server.
func start() (*cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	owner, err := serverUser()
	if err != nil {
		return nil, err
	}
	c := &cluster{password: randomPassword()}
	if c.dir, err = os.MkdirTemp("", "agiraph-pg-"); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if err := c.setUp(bin, owner); err != nil {
		_ = os.RemoveAll(c.dir) // the set-up's error is the one to report
		return nil, err
	}
	return c, nil
}

func (c *cluster) setUp(bin string, owner *account) error {
	pwfile := filepath.Join(c.dir, "password")
	if err := os.WriteFile(pwfile, []byte(c.password+"\n"), 0o600); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	for _, p := range []string{c.dir, pwfile} {
		if err := owner.own(p); err != nil {
			return fmt.Errorf("pgtest: give %s to the server's user: %w", p, err)
		}
	}
	// --no-sync: initdb does not flush the new cluster's files to the disk, which only matters if
	// the machine crashes before the cluster is used; the server itself keeps fsync on.
	// The C locale keeps text comparisons byte-wise and needs no locale installed.
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", filepath.Join(c.dir, "data"), "-U", superuser,
		"--pwfile", pwfile, "--auth-host", "scram-sha-256", "--auth-local", "trust",
		"-E", "UTF8", "--locale", "C", "--no-sync")
	initdb.Dir = c.dir
	initdb.SysProcAttr = owner.attr()
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb in %s: %w\n%s", c.dir, err, out)
	}
	_ = os.Remove(pwfile) // stop removes the folder it is in
	var err error
	for range 3 { // the free port may be taken by someone else before the server binds it
		if err = c.serve(bin, owner); err == nil {
			return nil
		}
	}
	return err
}

// serve starts the server on a free port and waits until it accepts connections.
func (c *cluster) serve(bin string, owner *account) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("pgtest: find a free port: %w", err)
	}
	c.port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close() // it only found a free port; a server that cannot bind it is tried again
	logPath := filepath.Join(c.dir, "server.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer func() { _ = logFile.Close() }() // the server writes to its own copy
	c.server = exec.Command(filepath.Join(bin, "postgres"), "-D", filepath.Join(c.dir, "data"),
		"-p", strconv.Itoa(c.port), "-k", c.dir, "-c", "listen_addresses=127.0.0.1")
	c.server.Dir = c.dir
	c.server.Stdout, c.server.Stderr = logFile, logFile
	c.server.SysProcAttr = owner.attr()
	c.exited = make(chan struct{})
	if c.release, err = startTied(c.server); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	go func() {
		_ = c.server.Wait() // its ProcessState says how it ended
		close(c.exited)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, c.url("postgres"))
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-c.exited:
			c.release()
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("pgtest: postgres in %s exited: %v\n%s", c.dir, c.server.ProcessState, lastLines(log, 20))
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("pgtest: postgres in %s did not accept connections within %v: %w", c.dir, startTimeout, err), c.stop())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop shuts the server down (fast: open connections are closed) and removes the folder.
func (c *cluster) stop() error {
	var errs []error
	if c.server != nil && c.server.Process != nil {
		_ = c.server.Process.Signal(interrupt) // it fails only if the server has exited, which exited tells
		select {
		case <-c.exited:
		case <-time.After(time.Minute):
			_ = c.server.Process.Kill() // as Signal
			<-c.exited
			errs = append(errs, fmt.Errorf("postgres in %s did not shut down within a minute and was killed", c.dir))
		}
		c.release()
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pgtest: stop the cluster: %w", err)
	}
	return nil
}

func randomPassword() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
