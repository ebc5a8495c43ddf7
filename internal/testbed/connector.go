package testbed

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ConnectorFile writes a copy of the connector file src ({"name",
// "config"}) into dir ("" for a new temporary directory) with overrides
// applied to its config (a nil value deletes the key), and returns the
// copy's path. The copy is readable by all: the image test mounts it into
// a container that runs as another user.
//
// Unless overridden, the copy gets an offsets topic of its own: the files
// have fixed connector names, and a position recorded under one by an
// earlier test or run would refuse the test's new slot (ErrSlotGone).
func ConnectorFile(t testing.TB, dir, src string, overrides map[string]any) string {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Name   string         `json:"name"`
		Config map[string]any `json:"config"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	doc.Config["offsets.storage.topic"] = fmt.Sprintf("offsets.%d", time.Now().UnixNano())
	for k, v := range overrides {
		if v == nil {
			delete(doc.Config, k)
		} else {
			doc.Config[k] = v
		}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, "connector.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
