package confkey

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated key reference in the docs")

// TestKeyReference: the key reference in the docs, between MarkdownBegin
// and MarkdownEnd in README.md or a file under docs/, is Markdown() of
// the declarations. Run with -update to regenerate it.
func TestKeyReference(t *testing.T) {
	root := moduleRoot(t)
	var found []string
	for _, path := range docFiles(t, root) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		begin := strings.Index(text, MarkdownBegin)
		if begin < 0 {
			continue
		}
		found = append(found, path)
		start := begin + len(MarkdownBegin)
		end := strings.Index(text[start:], MarkdownEnd)
		if end < 0 {
			t.Fatalf("%s: %q without %q", path, MarkdownBegin, MarkdownEnd)
		}
		want := Markdown() + "\n"
		if got := text[start : start+end]; got != want {
			if !*update {
				t.Errorf("%s: the key reference is not the declarations'; run go test ./internal/confkey -run TestKeyReference -update", path)
				continue
			}
			text = text[:start] + want + text[start+end:]
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(found) != 1 {
		t.Errorf("the key reference (marker %q) is in %d files %v; want exactly one", MarkdownBegin, len(found), found)
	}
}

// optionCell matches the first cell of a row of the docs' hand-written
// option tables: "| `key`, `.other` | ...".
var optionCell = regexp.MustCompile("(?m)^\\| ((?:`[^`]+`(?:, )?)+) \\|")

// TestDocumentedKeysAreDeclared: every key named in the first column of a
// hand-written table of the docs is declared (a key renamed or dropped
// from the table must leave the docs too). Keys written relative to the
// row's first key (`.port`) and table options (`type`) are not checked.
func TestDocumentedKeysAreDeclared(t *testing.T) {
	table := Keys()
	root := moduleRoot(t)
	for _, path := range docFiles(t, root) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range optionCell.FindAllStringSubmatch(string(data), -1) {
			for _, k := range strings.Split(m[1], ", ") {
				k = strings.Trim(k, "`")
				if strings.HasPrefix(k, ".") || !strings.Contains(k, ".") || strings.ContainsAny(k, " =") {
					continue
				}
				if _, ok := Lookup(table, k); !ok {
					if _, ok := Lookup(table, "transforms.<alias>."+k); !ok {
						t.Errorf("%s names %q, which is not declared", filepath.Base(path), k)
					}
				}
			}
		}
	}
}

func docFiles(t *testing.T, root string) []string {
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return files
}

func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
