package deploytest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/testbed"

	"github.com/outboxrelay/outboxrelay/capture"
)

// imageMaxBytes is the size the image must stay under.
const imageMaxBytes = 25_000_000

// stopGrace is docker stop's grace period in the test, as Kubernetes'
// terminationGracePeriodSeconds in deploy/kubernetes.
const stopGrace = 30 * time.Second

// testImage returns the image scripts/image-test built; the test skips
// without it, also under OUTBOXRELAY_REQUIRE_SERVICES (the image is not
// part of the bed: make test runs make image-test, which sets it).
func testImage(t *testing.T) string {
	t.Helper()
	img := os.Getenv(envImage)
	if img == "" {
		t.Skipf("skipping: needs the image built from ./Dockerfile (%s unset); run make image-test", envImage)
	}
	return img
}

// TestImage runs the image users get as make demo runs the binary: on the
// bed, with a read-only root filesystem, no capabilities, the connector
// JSON mounted, Kafka over TLS with the image's CA bundle as the only trust
// store. The two example events arrive exactly as in make demo, /readyz
// answers 200, and docker stop ends it with exit code 0 within the grace
// period, the slot confirmed up to the last commit.
func TestImage(t *testing.T) {
	img := testImage(t)
	admin := testbed.Admin(t)
	host, port := testbed.PostgresHostPort(t)
	tlsBrokers := os.Getenv(envTLSBrokers)
	if tlsBrokers == "" {
		t.Fatalf("%s is unset: the bed's Kafka has no TLS listener; restart it (scripts/devenv down; scripts/devenv up)", envTLSBrokers)
	}
	checkImageConfig(t, img)
	checkBundle(t, img)

	prepareExample(t, admin)
	slot := fmt.Sprintf("image_%d", time.Now().UnixNano())
	t.Cleanup(func() { testbed.DropSlot(t, admin, slot) })
	cfg := exampleConfig(t, t.TempDir(), host, port, map[string]string{"slot.name": slot, "security.protocol": "SSL"})
	checkTLSNeedsBundle(t, img, cfg, tlsBrokers)
	fromOrders, fromPayments := testbed.EndOffsets(t, "orders"), testbed.EndOffsets(t, "payments")

	httpPort := freePort(t)
	name := fmt.Sprintf("outboxrelay-test-%d", time.Now().UnixNano())
	mustDocker(t, time.Minute, append(hardened(cfg), "-d", "--name", name, img,
		"run", "--config", "/etc/outboxrelay/connector.json", "--kafka-brokers", tlsBrokers,
		"--http-addr", "127.0.0.1:"+strconv.Itoa(httpPort))...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("container %s, last log lines:\n%s", name, containerLogs(name))
		}
		_, _ = docker(time.Minute, "rm", "-f", name)
	})
	testbed.WaitSlotActive(t, admin, slot, 60*time.Second)
	waitReady(t, httpPort, 60*time.Second)
	checkManifestEndpoints(t, httpPort)

	orderID := insertExample(t, admin, "orders", "9191642889", "paid", `{"orderId":9191642889,"payableAmount":199.00}`)
	payID := insertExample(t, admin, "payments", "pay-889900", "PaymentSucceeded", `{"paymentId":"pay-889900","channel":"wallet"}`)
	// As make demo: updates and deletes of outbox rows send nothing.
	ids := "('" + orderID + "', '" + payID + "')"
	testbed.Exec(t, admin, `UPDATE public.outbox SET status = 'SENT', sent_at = now() WHERE message_id IN `+ids,
		`DELETE FROM public.outbox WHERE message_id IN `+ids)
	var lastEnd uint64
	if err := admin.QueryRow(context.Background(), `SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint`).Scan(&lastEnd); err != nil {
		t.Fatal(err)
	}
	checkExample(t, fromOrders, exampleEvent{"orders", orderID, "9191642889", "paid", `{"orderId":9191642889,"payableAmount":199.00}`})
	checkExample(t, fromPayments, exampleEvent{"payments", payID, "pay-889900", "PaymentSucceeded", `{"channel":"wallet","paymentId":"pay-889900"}`})

	started := time.Now()
	mustDocker(t, stopGrace+30*time.Second, "stop", "-t", strconv.Itoa(int(stopGrace.Seconds())), name)
	took := time.Since(started)
	state := mustDocker(t, time.Minute, "inspect", "-f", "{{.State.ExitCode}} {{.State.OOMKilled}}", name)
	if state != "0 false" || took >= stopGrace {
		t.Errorf("docker stop took %s (grace %s), exit code and OOM-killed: %q; want exit 0 within the grace period", took.Round(time.Millisecond), stopGrace, state)
	}
	if got := testbed.ConfirmedFlush(t, admin, slot); got < lastEnd {
		t.Errorf("after docker stop the slot confirmed %s; want at least the last commit's end %s", capture.LSN(got), capture.LSN(lastEnd))
	}
	t.Logf("image %s: both events over TLS, /readyz 200, docker stop in %s with exit 0, slot confirmed past %s",
		img, took.Round(time.Millisecond), capture.LSN(lastEnd))
}

// hardened is docker run with what the Kubernetes manifest asks for: the
// host's network (the bed listens on 127.0.0.1), a read-only root
// filesystem, no capabilities, no privilege escalation, and the connector
// JSON mounted read-only where the image's CMD expects it.
func hardened(cfg string) []string {
	return []string{"run", "--network", "host", "--read-only", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "-v", cfg + ":/etc/outboxrelay/connector.json:ro"}
}

// checkImageConfig: the image runs as uid 65532 (the manifest's runAsUser)
// and stays under imageMaxBytes.
func checkImageConfig(t *testing.T, img string) {
	t.Helper()
	out := mustDocker(t, time.Minute, "image", "inspect", "-f", "{{.Config.User}} {{.Size}}", img)
	user, sizeStr, _ := strings.Cut(out, " ")
	size, err := strconv.ParseInt(sizeStr, 10, 64)
	if err != nil {
		t.Fatalf("docker image inspect said %q: %v", out, err)
	}
	if user != "65532:65532" {
		t.Errorf("image user %q, want 65532:65532 (deploy/kubernetes runAsUser)", user)
	}
	if size >= imageMaxBytes {
		t.Errorf("image is %d bytes, want under %d", size, imageMaxBytes)
	}
	t.Logf("image %s: %.1f MB, user %s", img, float64(size)/1e6, user)
}

// checkBundle: the image holds a CA bundle of public roots (Debian's
// ca-certificates, well over 100), and without it the relay cannot reach the
// bed's Kafka over TLS: `check` with SSL_CERT_FILE and SSL_CERT_DIR pointed
// away fails on the certificate, so the TLS run of TestImage succeeds
// through the bundle.
func checkBundle(t *testing.T, img string) {
	t.Helper()
	id := mustDocker(t, time.Minute, "create", img)
	defer docker(time.Minute, "rm", id)
	out, err := docker(time.Minute, "cp", id+":/etc/ssl/certs/ca-certificates.crt", "-")
	if err != nil {
		t.Fatalf("the image has no /etc/ssl/certs/ca-certificates.crt: %v", err)
	}
	pem, err := untarOne(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(pem, []byte("-----BEGIN CERTIFICATE-----")); n < 100 {
		t.Errorf("the image's CA bundle holds %d certificates, want Debian's public roots (over 100)", n)
	} else {
		t.Logf("the image's CA bundle holds %d certificates", n)
	}
}

// checkTLSNeedsBundle runs `outboxrelay check` in the image with Go's
// system roots pointed away from the bundle (SSL_CERT_FILE, SSL_CERT_DIR):
// Kafka's TLS listener must then be refused for its certificate. So when
// the relay reaches it in TestImage with no truststore set, the image's
// bundle is what it trusted.
func checkTLSNeedsBundle(t *testing.T, img, cfg, tlsBrokers string) {
	t.Helper()
	args := append(hardened(cfg), "--rm", "-e", "SSL_CERT_FILE=/nonexistent", "-e", "SSL_CERT_DIR=/nonexistent", img,
		"check", "--config", "/etc/outboxrelay/connector.json", "--kafka-brokers", tlsBrokers)
	out, err := exec.Command(dockerCLI(), args...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "✗ Kafka reachable") || !strings.Contains(string(out), "certificate") {
		t.Fatalf("outboxrelay check without the CA bundle: err %v, output:\n%s\nwant a failed Kafka check naming the certificate", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "Kafka reachable") {
			t.Logf("without the bundle: %s", strings.TrimSpace(l))
		}
	}
}

// containerLogs returns the last lines a container wrote (the relay logs
// to stderr).
func containerLogs(name string) string {
	out, err := exec.Command(dockerCLI(), "logs", "--tail", "40", name).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("docker logs %s: %v\n%s", name, err, out)
	}
	return string(out)
}

func untarOne(archive string) ([]byte, error) {
	tr := tar.NewReader(strings.NewReader(archive))
	if _, err := tr.Next(); err != nil {
		return nil, fmt.Errorf("reading docker cp's tar stream: %w", err)
	}
	return io.ReadAll(tr)
}

// checkManifestEndpoints calls the Kubernetes manifest's probe and scrape
// paths on the running container: each answers 200, /metrics with the
// relay's series.
func checkManifestEndpoints(t *testing.T, port int) {
	t.Helper()
	m := readManifest(t)
	for _, path := range []string{m.readyPath, m.livePath, m.scrapePath} {
		res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s (deploy/kubernetes): %s", path, res.Status)
		}
		if path == m.scrapePath && !strings.Contains(string(body), "\noutboxrelay_ready 1\n") {
			t.Errorf("GET %s: no outboxrelay_ready 1 in:\n%.2000s", path, body)
		}
	}
}

// waitReady polls /readyz until it answers 200.
func waitReady(t *testing.T, port int, timeout time.Duration) {
	t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	deadline := time.Now().Add(timeout)
	last := errors.New("no answer yet")
	for time.Now().Before(deadline) {
		res, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Errorf("%s: %s", res.Status, strings.TrimSpace(string(body)))
		} else {
			last = err
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s not 200 after %s: %v", url, timeout, last)
}
