package e2e_test

import (
	"bytes"
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
// no schema registered twice), and the registry refusing connections
// while new schemas keep coming (the slot does not move meanwhile;
// nothing missing after).
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
	t.Run("Outage", func(t *testing.T) { testRegistryOutage(t, b, outage) })
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

// testRegistryOutage: under 1,000 events/s whose schema changes every 2 s,
// the registry refuses connections for outage. The relay must hold: the
// slot's confirmed position stays where it was once the first record of a
// new schema waits (the WAL moves on), and after the outage every event
// arrives, per aggregate in commit order.
func testRegistryOutage(t *testing.T, b *privateBed, outage time.Duration) {
	reg := testbed.StartRegistry(t)
	f := b.newFixture(t, "regout")
	cfg := b.config(t, f, avroConfig(reg.URL))
	log := logFile(t, "relay")
	r := b.startRelay(t, cfg, log)
	f.waitStreaming(t)
	l := startFaultLoadSQL(t, b, f, 1000, schemaEvolvingInsert(f))
	time.Sleep(3 * time.Second)

	control(t, reg.Control, "/_outage", fmt.Sprintf(`{"for":%q}`, outage.String()))
	start := time.Now()
	// Within 2 s a record of a new schema waits for the registry, and the
	// records before it are acknowledged within a few more.
	time.Sleep(5 * time.Second)
	held, walAtHold := confirmedFlush(t, f.admin, f.name), walLSN(t, f.admin)
	for time.Since(start) < outage-time.Second {
		if r.exited() {
			t.Fatalf("the relay exited during the registry outage: %s", r.logTail(10))
		}
		if c := confirmedFlush(t, f.admin, f.name); c != held {
			t.Fatalf("%s into the registry outage the slot moved from %s to %s: records were confirmed that could not have been converted", time.Since(start).Round(time.Second), held, c)
		}
		time.Sleep(500 * time.Millisecond)
	}
	walAtEnd := walLSN(t, f.admin)
	if walAtEnd <= walAtHold {
		t.Fatalf("the WAL did not move during the outage (%s → %s): the load stalled, the test shows nothing", walAtHold, walAtEnd)
	}
	t.Logf("registry outage of %s: slot held at %s for %s while the WAL went %s → %s",
		outage, held, (outage - 6*time.Second).Round(time.Second), walAtHold, walAtEnd)
	time.Sleep(5 * time.Second) // the registry is back: the relay resumes
	stats := l.finish(t)
	target := walLSN(t, f.admin)
	took, ok := waitConfirmed(t, f, target, 2*time.Minute)
	if !ok {
		t.Fatalf("after the registry outage the slot did not confirm %s within %s; %s", target, took.Round(time.Second), f.slotState(t))
	}
	r.stop(t, 15*time.Second)
	rep, _, _ := b.verifyOutbox(t, f)
	t.Logf("registry outage: load %s; %d events, %d deliveries; slot confirmed the end %s after the load stopped", stats, rep.Events, rep.Deliveries, took.Round(time.Millisecond))
	requireComplete(t, "registry outage", rep)
	requireOneVersionEach(t, reg.URL, "registry outage") // one per schema: versions equal the distinct schemas
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
