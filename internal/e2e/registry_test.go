package e2e_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"
	"github.com/outboxrelay/outboxrelay/router"
)

// Environment of TestRegistryFaults: the crash loop's SIGKILLs (default
// 5; 20 for the must-show) and the registry outage (default 20s;
// 60s for it).
const (
	EnvRegistryCrash  = "OUTBOXRELAY_REGISTRY_CRASH"
	EnvRegistryOutage = "OUTBOXRELAY_REGISTRY_OUTAGE"
)

// TestRegistryFaults runs the relay with AvroConverter (key and value)
// against the bed's registry (registryserver) on a private bed: a crash
// loop of SIGKILLs under load (nothing missing, per-aggregate order kept,
// no schema registered twice), the registry refusing connections while new
// schemas keep coming (the slot does not move meanwhile; nothing missing
// after), and the registry hanging (SIGSTOP: connections accepted, never
// answered) as long, with wal_sender_timeout at 10 s: the same, and the
// replication connection kept.
func TestRegistryFaults(t *testing.T) {
	t.Parallel()
	kills, outage := 5, 20*time.Second
	if v := os.Getenv(EnvRegistryCrash); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a number of SIGKILLs", EnvRegistryCrash, v)
		}
		kills = n
	}
	if v := os.Getenv(EnvRegistryOutage); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 5*time.Second {
			t.Fatalf("%s=%q: want a duration of 5s or more", EnvRegistryOutage, v)
		}
		outage = d
	}
	b := startPrivateBed(t)
	t.Run("CrashLoop", func(t *testing.T) {
		reg := testbed.StartRegistry(t)
		testCrashLoopOf(t, b, kills, crashLoad{
			extra: func(*fixture) map[string]string { return avroConfig(reg.URL) },
			rate:  1000,
		})
		requireOneVersionEach(t, reg.URL)
	})
	t.Run("Outage", func(t *testing.T) { testRegistryOutage(t, b, registryOutage, outage) })
	// The hang lasts at least 25 s: the slot is held from 12 s into it.
	t.Run("Hang", func(t *testing.T) { testRegistryOutage(t, b, registryHang, max(outage, 25*time.Second)) })
}

// avroConfig sets both converters to AvroConverter on the registry at url.
func avroConfig(url string) map[string]string {
	return map[string]string{
		"key.converter":                         router.AvroConverterClass,
		"key.converter.schema.registry.url":     url,
		"value.converter":                       router.AvroConverterClass,
		"value.converter.schema.registry.url":   url,
		"value.converter.auto.register.schemas": "true",
	}
}

// schemaEvolvingInsert is the fault load with a payload that gains a new
// field every 2 seconds: a new value schema, which the relay must register
// before it can send the record.
func schemaEvolvingInsert(f *fixture) string {
	return fmt.Sprintf(`INSERT INTO %s.outbox (aggregatetype, aggregateid, ord, payload)
			SELECT CASE WHEN k %% 3 = 0 THEN 'customer' ELSE 'order' END, 'agg-' || k, $1::bigint * %d + g,
				jsonb_build_object('tx', $1::bigint, 'g', g, 'f' || (extract(epoch FROM clock_timestamp())::bigint / 2), true)
			FROM (SELECT g, ($1::bigint * 7 + g) %% %d AS k FROM generate_series(1, $2::int) g) s ORDER BY g`, f.name, ordPerTx, faultAggregates)
}

// registryFault makes the registry unavailable for d; the function it
// returns ends the fault (or nothing, when it ends by itself).
type registryFault struct {
	name  string
	begin func(t *testing.T, reg testbed.Registry, d time.Duration) (end func())
	// walSenderTimeout, if set, is PostgreSQL's wal_sender_timeout during
	// the test: a relay that sends no status update for that long is cut
	// off.
	walSenderTimeout string
	// settle is how long after the fault begins the slot is held: a
	// record of a new schema waits within 2 s, and the records before it
	// are acknowledged and confirmed within a few more, or, while the
	// relay waits for an answer, at the next status update after the call
	// gives up.
	settle time.Duration
}

// registryOutage: the registry's port refuses connections.
var registryOutage = registryFault{name: "outage", settle: 5 * time.Second, begin: func(t *testing.T, reg testbed.Registry, d time.Duration) func() {
	control(t, reg.Control, "/_outage", fmt.Sprintf(`{"for":%q}`, d.String()))
	return func() {}
}}

// registryHang: the registry's process is stopped (SIGSTOP): connections
// are accepted and never answered. With wal_sender_timeout at 10 s, a
// relay that waited for one answer longer than that without a standby
// status update (as it did with a 30 s request timeout) is cut off.
var registryHang = registryFault{name: "hang", walSenderTimeout: "10s", settle: 12 * time.Second, begin: func(t *testing.T, reg testbed.Registry, _ time.Duration) func() {
	return reg.Hang(t)
}}

// testRegistryOutage: under 1,000 events/s whose schema changes every 2 s,
// the registry is unavailable for outage (fault). The relay must hold:
// the slot's confirmed position stays where it was once the first record
// of a new schema waits (the WAL moves on), the replication connection is
// kept (the same walsender, no reconnect), and after the outage every
// event arrives, per aggregate in commit order.
func testRegistryOutage(t *testing.T, b *privateBed, fault registryFault, outage time.Duration) {
	reg := testbed.StartRegistry(t)
	f := b.newFixture(t, "reg"+fault.name)
	if fault.walSenderTimeout != "" {
		testbed.Exec(t, f.admin, fmt.Sprintf(`ALTER SYSTEM SET wal_sender_timeout = '%s'`, fault.walSenderTimeout), `SELECT pg_reload_conf()`)
		t.Cleanup(func() {
			conn := b.Connect(t)
			testbed.Exec(t, conn, `ALTER SYSTEM RESET wal_sender_timeout`, `SELECT pg_reload_conf()`)
		})
	}
	cfg := b.config(t, f, avroConfig(reg.URL))
	log := logFile(t, "relay")
	r := b.startRelay(t, cfg, log)
	f.waitStreaming(t)
	walsender := walsenderPID(t, f)
	l := startFaultLoadSQL(t, b, f, 1000, schemaEvolvingInsert(f))
	time.Sleep(3 * time.Second)

	end := fault.begin(t, reg, outage)
	start := time.Now()
	time.Sleep(fault.settle)
	held, walAtHold := confirmedFlush(t, f.admin, f.name), walLSN(t, f.admin)
	for time.Since(start) < outage-time.Second {
		if r.exited() {
			t.Fatalf("the relay exited during the registry %s: %s", fault.name, r.logTail(10))
		}
		if c := confirmedFlush(t, f.admin, f.name); c != held {
			t.Fatalf("%s into the registry %s the slot moved from %s to %s: records were confirmed that could not have been converted", time.Since(start).Round(time.Second), fault.name, held, c)
		}
		time.Sleep(500 * time.Millisecond)
	}
	walAtEnd := walLSN(t, f.admin)
	if walAtEnd <= walAtHold {
		t.Fatalf("the WAL did not move during the %s (%s → %s): the load stalled, the test shows nothing", fault.name, walAtHold, walAtEnd)
	}
	for time.Since(start) < outage {
		time.Sleep(100 * time.Millisecond)
	}
	end()
	t.Logf("registry %s of %s: slot held at %s for %s while the WAL went %s → %s",
		fault.name, outage, held, (outage - fault.settle - time.Second).Round(time.Second), walAtHold, walAtEnd)
	time.Sleep(5 * time.Second) // the registry is back: the relay resumes
	stats := l.finish(t)
	target := walLSN(t, f.admin)
	took, ok := waitConfirmed(t, f, target, 2*time.Minute)
	if !ok {
		t.Fatalf("after the registry %s the slot did not confirm %s within %s; %s", fault.name, target, took.Round(time.Second), f.slotState(t))
	}
	after := walsenderPID(t, f)
	r.stop(t, 15*time.Second)
	rep, _, _ := b.verifyOutbox(t, f)
	t.Logf("registry %s: load %s; %d events, %d deliveries; slot confirmed the end %s after the load stopped", fault.name, stats, rep.Events, rep.Deliveries, took.Round(time.Millisecond))
	requireComplete(t, "registry "+fault.name, rep)
	requireOneVersionEach(t, reg.URL, "registry "+fault.name) // one per schema: versions equal the distinct schemas
	if reconnects := grepLines(r.log(), "session failed, retrying"); walsender == 0 || after != walsender || len(reconnects) != 0 {
		t.Errorf("registry %s: the relay's walsender was pid %d before and %d after (reconnect lines: %q); want the same walsender, never cut off for silence",
			fault.name, walsender, after, reconnects)
	} else {
		t.Logf("registry %s: walsender pid %d throughout (wal_sender_timeout %s), no reconnect", fault.name, walsender, cmp.Or(fault.walSenderTimeout, "the bed's"))
	}
}

// control posts body to the registryserver's control API.
func control(t *testing.T, base, path, body string) {
	t.Helper()
	resp, err := http.Post(base+path, "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatalf("registryserver control %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("registryserver control %s: HTTP %d %s", path, resp.StatusCode, b)
	}
}

// requireOneVersionEach fails unless every version of every subject holds
// a schema of its own: a schema registered twice would be a second version
// with the same text (srfake, whose compatibility checks always pass,
// would accept it). With no what, it also wants one version per subject:
// the load's schema never changes.
func requireOneVersionEach(t *testing.T, url string, what ...string) {
	t.Helper()
	var subjects []string
	getJSON(t, url+"/subjects", &subjects)
	if len(subjects) == 0 {
		t.Fatal("the registry holds no subject")
	}
	for _, s := range subjects {
		var versions []int
		getJSON(t, url+"/subjects/"+s+"/versions", &versions)
		seen := map[string]int{}
		for _, v := range versions {
			var sv struct{ Schema string }
			getJSON(t, fmt.Sprintf("%s/subjects/%s/versions/%d", url, s, v), &sv)
			if prev, dup := seen[sv.Schema]; dup {
				t.Errorf("subject %s: versions %d and %d hold the same schema: registered twice", s, prev, v)
			}
			seen[sv.Schema] = v
		}
		if len(what) == 0 && len(versions) != 1 {
			t.Errorf("subject %s has versions %v; the load's schema never changes", s, versions)
		}
		t.Logf("subject %s: %d versions", s, len(versions))
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, b)
	}
}
