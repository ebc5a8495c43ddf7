package designcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const root = "../.."

// goFiles returns every Go file of the repository, test files included.
func goFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func design(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "DESIGN.md"))
	if err != nil {
		t.Fatalf("DESIGN.md: %v", err)
	}
	return string(b)
}

// defined returns the numbers of the numbered list under the heading that
// starts with prefix.
func defined(t *testing.T, doc, prefix string) map[string]bool {
	t.Helper()
	i := strings.Index(doc, "\n## "+prefix)
	if i < 0 {
		t.Fatalf("DESIGN.md has no section %q", prefix)
	}
	section := doc[i+4:]
	if j := strings.Index(section, "\n## "); j >= 0 {
		section = section[:j]
	}
	nums := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(\d+)\. `).FindAllStringSubmatch(section, -1) {
		nums[m[1]] = true
	}
	return nums
}

var citation = regexp.MustCompile(`(?i)\b(invariants?|spec)\s+(\d+(?:\s*(?:,|and|–|-)\s*\d+)*)`)

// TestCitedNumbersExist: a comment citing "invariant N" or "spec N" cites
// a number DESIGN.md defines.
func TestCitedNumbersExist(t *testing.T) {
	doc := design(t)
	want := map[string]map[string]bool{
		"invariant": defined(t, doc, "Invariants"),
		"spec":      defined(t, doc, "EventRouter compatibility rules"),
	}
	if len(want["invariant"]) == 0 || len(want["spec"]) == 0 {
		t.Fatal("DESIGN.md defines no numbered invariants or spec rules")
	}
	for _, path := range goFiles(t) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range citation.FindAllStringSubmatch(string(b), -1) {
			kind := strings.TrimSuffix(strings.ToLower(m[1]), "s")
			for _, n := range regexp.MustCompile(`\d+`).FindAllString(m[2], -1) {
				if !want[kind][n] {
					t.Errorf("%s cites %s %s, which DESIGN.md does not define", path, kind, n)
				}
			}
		}
	}
}

// TestNamedTestsExist: every test DESIGN.md names as the one that fails
// when an invariant breaks exists.
func TestNamedTestsExist(t *testing.T) {
	funcs := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)\w+)\(`)
	for _, path := range goFiles(t) {
		if !strings.HasSuffix(path, "_test.go") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			funcs[m[1]] = true
		}
	}
	named := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+)\\*?(?:/[A-Za-z]+)?`").FindAllStringSubmatch(design(t), -1)
	if len(named) < 20 {
		t.Fatalf("DESIGN.md names %d tests; expected the invariants' tests", len(named))
	}
	for _, m := range named {
		name := m[1]
		found := funcs[name]
		if strings.HasSuffix(m[0], "*`") {
			for f := range funcs {
				found = found || strings.HasPrefix(f, name)
			}
		}
		if !found {
			t.Errorf("DESIGN.md names %s, which no test file declares", m[0])
		}
	}
}

// TestImportBoundaries pins the package table's "may not import" column.
func TestImportBoundaries(t *testing.T) {
	const mod = "github.com/outboxrelay/outboxrelay/"
	rules := map[string][]string{
		"capture":           {mod, "github.com/jackc/"},
		"router":            {mod},
		"relay":             {mod + "sink", mod + "replication", mod + "poll", mod + "postgres", "github.com/jackc/", "github.com/segmentio/kafka-go"},
		"replication":       {mod + "router", mod + "sink", mod + "relay", mod + "poll", "github.com/segmentio/kafka-go"},
		"sink":              {"github.com/jackc/", mod + "replication", mod + "poll", mod + "postgres", mod + "sink/exactlyonce"},
		"sink/exactlyonce":  {"github.com/jackc/", mod + "replication", mod + "poll", mod + "postgres", mod + "internal/setup"},
		"outbox":            {mod + "relay", mod + "replication", mod + "sink"},
		"consumer":          {mod + "relay", mod + "replication", mod + "sink"},
		"poll":              {mod + "router", mod + "sink", mod + "relay", mod + "replication", "github.com/jackc/pglogrepl", "github.com/segmentio/kafka-go"},
		"postgres":          {mod + "router", mod + "sink", mod + "relay", mod + "replication", mod + "poll", "github.com/jackc/pglogrepl", "github.com/segmentio/kafka-go"},
		"internal/rawconn":  {mod},
		"internal/confkey":  {mod},
		"internal/terminal": {mod},
	}
	// allowed are the exceptions to a rule: the router reads the capture
	// row as the source yields it, and its keys through their declarations
	// (internal/confkey, a package that imports nothing of the module).
	allowed := map[string][]string{"router": {mod + "capture", mod + "internal/confkey"}}
	for pkg, banned := range rules {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == mod+pkg || slices.Contains(allowed[pkg], dep) {
				continue
			}
			for _, b := range banned {
				if strings.HasPrefix(dep, b) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}

// allowedTables are package-level lookup tables that are never written
// after initialisation.
var allowedTables = map[string]bool{
	"knownKeys": true, "actionNames": true, "Differences": true, "murmur2": true, "Files": true,
	"skipReasons": true, "scramSHA256": true, "scramSHA512": true, "causeNames": true,
	"NoProducer": true, "xerialMagic": true,
}

// TestNoPackageState pins invariant 8: package-level variables of non-test
// code are sentinel errors, compiled regexps, interface assertions or
// listed read-only tables.
func TestNoPackageState(t *testing.T) {
	fset := token.NewFileSet()
	for _, path := range goFiles(t) {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if name.Name == "_" || allowedTables[name.Name] || (i < len(vs.Values) && immutableInit(vs.Values[i])) {
						continue
					}
					t.Errorf("%s: package-level variable %s (invariant 8: pass state in, or list a read-only table here)", fset.Position(name.Pos()), name.Name)
				}
			}
		}
	}
}

func immutableInit(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, _ := sel.X.(*ast.Ident)
	if pkg == nil {
		return false
	}
	switch pkg.Name + "." + sel.Sel.Name {
	case "errors.New", "fmt.Errorf", "regexp.MustCompile", "crc32.MakeTable", "terminal.Final", "terminal.Session":
		return true
	}
	return false
}

// dataTables are functions that only return a table.
var dataTables = map[string]bool{"keyTable": true}

// TestFunctionLength: a non-test function longer than 80 lines cannot be
// read at once; split it (data tables aside).
func TestFunctionLength(t *testing.T) {
	fset := token.NewFileSet()
	for _, path := range goFiles(t) {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || dataTables[fd.Name.Name] {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > 80 {
				t.Errorf("%s: %s is %d lines; split it (at most 80)", fset.Position(fd.Pos()), fd.Name.Name, n)
			}
		}
	}
}

// packageSection is the heading of DESIGN.md's one package table.
const packageSection = "Packages: what each owns, and may not import"

// tablePackages returns the packages named in the first column of the
// package table, in order, and the line each is on.
func tablePackages(t *testing.T, doc string) map[string]int {
	t.Helper()
	i := strings.Index(doc, "\n## "+packageSection)
	if i < 0 {
		t.Fatalf("DESIGN.md has no section %q", packageSection)
	}
	line := strings.Count(doc[:i], "\n") + 2
	section := doc[i+4:]
	if j := strings.Index(section, "\n## "); j >= 0 {
		section = section[:j]
	}
	rows := map[string]int{}
	row := regexp.MustCompile("^\\| `([^`]+)` \\|")
	for n, l := range strings.Split(section, "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			if _, dup := rows[m[1]]; dup {
				t.Errorf("DESIGN.md line %d: package %s has a second row in the package table", line+n, m[1])
			}
			rows[m[1]] = line + n
		}
	}
	return rows
}

// modulePackages lists every package of the module, relative to its root.
func modulePackages(t *testing.T) []string {
	t.Helper()
	const mod = "github.com/outboxrelay/outboxrelay"
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, mod), "/")
		if rel == "" {
			rel = "."
		}
		pkgs = append(pkgs, rel)
	}
	return pkgs
}

// TestPackageTable: DESIGN.md's package table is the only package map and
// lists every package of the module once, and nothing that is not one.
func TestPackageTable(t *testing.T) {
	rows := tablePackages(t, design(t))
	pkgs := modulePackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list ./... found %d packages; expected the module's", len(pkgs))
	}
	exists := map[string]bool{}
	for _, p := range pkgs {
		exists[p] = true
		if _, ok := rows[p]; !ok {
			t.Errorf("DESIGN.md's package table (section %q) has no row for package %s: add the row\n\t| `%s` | <what it owns> | <what it may not import, or —> |",
				packageSection, p, p)
		}
	}
	for p, line := range rows {
		if !exists[p] {
			t.Errorf("DESIGN.md line %d: the package table has a row for %s, which is not a package of the module: remove or rename the row", line, p)
		}
	}
}
