package testbed

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PrivateCluster is a throwaway PostgreSQL cluster for one test, for
// settings the shared bed cannot take (wal_level needs a restart): its port
// on 127.0.0.1, its directory (owned by the postgres OS user), its data
// directory and the server binaries.
type PrivateCluster struct {
	Port           int
	Dir, Data, Bin string
}

// StartPrivateCluster starts a private cluster with conf appended to its
// postgresql.conf. It runs as the postgres OS user, as scripts/devenv does,
// with trust authentication; the cluster is stopped and removed at the end
// of the test. Without root, a postgres user or the server binaries the
// test is skipped (failed with OUTBOXRELAY_REQUIRE_SERVICES=1).
func StartPrivateCluster(t testing.TB, conf string) PrivateCluster {
	t.Helper()
	return startPrivateCluster(t, postgresBinDir(t), conf)
}

// StartPrivateClusterOf is StartPrivateCluster on PostgreSQL major, from
// the server binaries scripts/devenv installs (ServerBinDir).
func StartPrivateClusterOf(t testing.TB, major int, conf string) PrivateCluster {
	t.Helper()
	return startPrivateCluster(t, ServerBinDir(t, major), conf)
}

func startPrivateCluster(t testing.TB, bin, conf string) PrivateCluster {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if Required() {
			t.Fatalf("a private PostgreSQL cluster: "+format, args...)
		}
		t.Skipf("skipping: a private PostgreSQL cluster: "+format, args...)
	}
	if os.Geteuid() != 0 {
		unavailable("needs root, to run initdb as the postgres OS user")
	}
	pgUser, err := user.Lookup("postgres")
	if err != nil {
		unavailable("no postgres OS user (scripts/devenv up makes it): %v", err)
	}
	if bin == "" {
		unavailable("no PostgreSQL server binaries (scripts/devenv up installs them)")
	}
	uid, _ := strconv.Atoi(pgUser.Uid)
	gid, _ := strconv.Atoi(pgUser.Gid)

	// Not t.TempDir: its parent is private to root.
	dir, err := os.MkdirTemp("", "outboxrelay-private-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	AsPostgres(t, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")

	extra := strings.Join([]string{
		"listen_addresses = '127.0.0.1'",
		"unix_socket_directories = '" + dir + "'",
		"fsync = off",
		"logging_collector = off",
		conf,
	}, "\n") + "\n"
	pgConf, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = pgConf.WriteString(extra)
	if cerr := pgConf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	pg := PrivateCluster{Dir: dir, Data: data, Bin: bin}
	pg.Port = pg.Start(t)
	return pg
}

// Start starts the cluster in pg.Data on a free port, records the port in
// its postgresql.conf and stops the cluster at the end of the test.
func (pg PrivateCluster) Start(t testing.TB) int {
	t.Helper()
	data, dir := pg.Data, pg.Dir
	// The port is found free, released, then bound by the server; an
	// outgoing connection can take it in between, so try a few.
	pgCtl := filepath.Join(pg.Bin, "pg_ctl")
	var port int
	for attempt := 1; ; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
		out, err := runAsPostgres(pgCtl, "-D", data, "-l", filepath.Join(dir, "postgres.log"), "-o", "-p "+strconv.Itoa(port), "-w", "-t", "30", "start")
		if err == nil {
			break
		}
		if attempt == 3 {
			t.Fatalf("pg_ctl start (3 ports tried): %v\n%s", err, out)
		}
		t.Logf("pg_ctl start on port %d failed (%v), trying another port", port, err)
	}
	// Restarts (pg_ctl restart) keep the port.
	if f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0); err != nil {
		t.Fatal(err)
	} else if _, err := fmt.Fprintf(f, "port = %d\n", port); err != nil || f.Close() != nil {
		t.Fatalf("recording the port in postgresql.conf: %v", err)
	}
	t.Cleanup(func() {
		cmd := exec.Command("runuser", "-u", "postgres", "--", pgCtl, "-D", data, "-m", "immediate", "-w", "stop")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("clean-up: stopping the private cluster in %s: %v\n%s", data, err, out)
		}
	})
	return port
}

// postgresBinDir is the bed's server binaries (so a private cluster runs
// the same PostgreSQL major as the bed), else pg_config's bindir or the
// newest /usr/lib/postgresql/*/bin with a server; "" when there is none.
func postgresBinDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(EnvPostgresBinDir); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			t.Fatalf("%s=%s: %v", EnvPostgresBinDir, d, err)
		}
		return d
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		d := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

// AsPostgres runs a command as the postgres OS user, failing the test
// with its output when it fails or takes over a minute.
func AsPostgres(t testing.TB, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String())
	}
}

// runAsPostgres runs a command as the postgres OS user and returns its
// output, giving up after a minute.
func runAsPostgres(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", name}, args...)...).CombinedOutput()
	return string(out), err
}
