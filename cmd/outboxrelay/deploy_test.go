package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxrelay/outboxrelay/internal/config"
)

// TestDeployConfigs: the connector configs shipped in deploy/ (the compose
// example and the Kubernetes ConfigMap) load and wire without an error or
// a warning, with the password from the environment as they expect.
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
	k8s := filepath.Join(t.TempDir(), "k8s.json")
	if err := os.WriteFile(k8s, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join("..", "..", "deploy", "connector.json"), k8s} {
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
		if !strings.Contains(strings.Join(cfg.Secrets, ","), "s3cret") {
			t.Errorf("%s: the password from ${env:OUTBOXRELAY_DB_PASSWORD} is not a known secret", path)
		}
		set, producer, err := build(cfg, "", slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		producer.Close()
		if set.Postgres.Password != "s3cret" {
			t.Errorf("%s: database.password not resolved from the environment", path)
		}
	}
}
