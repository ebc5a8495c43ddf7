package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/config"
)

// TestDeployConfigs: the connector configs shipped in deploy/ (the compose
// example and the Kubernetes ConfigMap) load and wire without an error or
// a warning: the compose one with its password from the environment, the
// Kubernetes one with both passwords from the mounted Secret's properties
// file and its CA files where the manifest mounts them (here in a temporary
// directory).
func TestDeployConfigs(t *testing.T) {
	t.Setenv("OUTBOXRELAY_DB_PASSWORD", "s3cret")
	manifest, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kubernetes", "outboxrelay.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The ConfigMap's connector.json is a literal block indented by 4.
	_, block, ok := strings.Cut(string(manifest), "connector.json: |\n")
	block, _, _ = strings.Cut(block, "\n---")
	if !ok || block == "" {
		t.Fatal("deploy/kubernetes/outboxrelay.yaml has no connector.json block")
	}
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "    "))
	}
	dir := t.TempDir()
	secrets, cas := filepath.Join(dir, "secrets")+"/", filepath.Join(dir, "ca")+"/"
	mounts := strings.NewReplacer("/var/run/secrets/outboxrelay/", secrets, "/etc/outboxrelay-ca/", cas)
	k8s := filepath.Join(dir, "k8s.json")
	writeFile(t, k8s, mounts.Replace(strings.Join(lines, "\n")))
	writeFile(t, secrets+"secrets.properties", "database.password=s3cret\nkafka.password=k4fka-pw\n")
	writeFile(t, cas+"postgres-ca.crt", selfSignedPEM(t))
	writeFile(t, cas+"kafka-ca.crt", selfSignedPEM(t))

	for path, wantSecrets := range map[string][]string{
		filepath.Join("..", "..", "deploy", "connector.json"): {"s3cret"},
		k8s: {"s3cret", "k4fka-pw"},
	} {
		cfg, err := config.Load(path, os.LookupEnv)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(cfg.Warnings) > 0 {
			t.Errorf("%s: warnings %v", path, cfg.Warnings)
		}
		if err := cfg.SetDefaultBrokers("kafka:9092", nil); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, s := range wantSecrets {
			if !strings.Contains(strings.Join(cfg.Secrets, ","), s) {
				t.Errorf("%s: the password %q is not a known secret", path, s)
			}
		}
		set, producer, err := build(cfg, "", slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		producer.Close()
		if set.Postgres.Password != "s3cret" {
			t.Errorf("%s: database.password not resolved", path)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// selfSignedPEM is a CA certificate, PEM, for the config's CA files.
func selfSignedPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "deploy test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
