package deploytest

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	manifestFile   = "../../deploy/kubernetes/outboxrelay.yaml"
	dockerfilePath = "../../Dockerfile"
)

// manifest is what the Kubernetes manifest says about the container.
type manifest struct {
	text                    string
	runAsUser, runAsGroup   string
	httpAddrPort, container string
	scrapePort, scrapePath  string
	readyPath, livePath     string
	grace                   string
}

func readManifest(t *testing.T) manifest {
	t.Helper()
	raw, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	find := func(what, re string) string {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("%s: no %s (%s)", manifestFile, what, re)
		}
		return m[1]
	}
	return manifest{
		text:         s,
		runAsUser:    find("runAsUser", `runAsUser: (\d+)`),
		runAsGroup:   find("runAsGroup", `runAsGroup: (\d+)`),
		httpAddrPort: find("--http-addr", `"--http-addr", "[^"]*:(\d+)"`),
		container:    find("containerPort", `containerPort: (\d+)`),
		scrapePort:   find("prometheus.io/port", `prometheus.io/port: "(\d+)"`),
		scrapePath:   find("prometheus.io/path", `prometheus.io/path: (\S+)`),
		readyPath:    find("readinessProbe path", `readinessProbe:\s+httpGet: \{path: (\S+),`),
		livePath:     find("livenessProbe path", `livenessProbe:\s+httpGet: \{path: (\S+),`),
		grace:        find("terminationGracePeriodSeconds", `terminationGracePeriodSeconds: (\d+)`),
	}
}

// TestKubernetesManifest: the manifest runs the image as the image is
// built: its uid and gid, its port, with a read-only root filesystem, no
// privilege escalation and no capabilities; Prometheus scrapes the port the
// relay serves /metrics on; the grace period is the one TestImage stops
// the container within; the probes are the relay's endpoints (TestImage
// calls them on the running image).
func TestKubernetesManifest(t *testing.T) {
	m := readManifest(t)
	raw, err := os.ReadFile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	user := regexp.MustCompile(`(?m)^USER (\d+):(\d+)$`).FindStringSubmatch(df)
	expose := regexp.MustCompile(`(?m)^EXPOSE (\d+)$`).FindStringSubmatch(df)
	if user == nil || expose == nil {
		t.Fatalf("%s: no USER uid:gid or EXPOSE line", dockerfilePath)
	}
	if m.runAsUser != user[1] || m.runAsGroup != user[2] {
		t.Errorf("manifest runs as %s:%s, the image's user is %s:%s", m.runAsUser, m.runAsGroup, user[1], user[2])
	}
	if !strings.Contains(df, `"--http-addr", ":`+expose[1]+`"`) {
		t.Errorf("%s: the CMD does not serve HTTP on the EXPOSEd port %s", dockerfilePath, expose[1])
	}
	for what, port := range map[string]string{"--http-addr": m.httpAddrPort, "containerPort": m.container, "prometheus.io/port": m.scrapePort} {
		if port != expose[1] {
			t.Errorf("manifest %s is %s; the image serves HTTP on %s", what, port, expose[1])
		}
	}
	if m.scrapePath != "/metrics" || m.readyPath != "/readyz" || m.livePath != "/healthz" {
		t.Errorf("scrape path %s, readiness %s, liveness %s; the relay serves /metrics, /readyz, /healthz", m.scrapePath, m.readyPath, m.livePath)
	}
	if g, _ := strconv.Atoi(m.grace); time.Duration(g)*time.Second != stopGrace {
		t.Errorf("terminationGracePeriodSeconds %s; TestImage proves a stop within %s", m.grace, stopGrace)
	}
	for _, want := range []string{"runAsNonRoot: true", "readOnlyRootFilesystem: true", "allowPrivilegeEscalation: false",
		`capabilities: {drop: ["ALL"]}`, "seccompProfile: {type: RuntimeDefault}", "strategy: {type: Recreate}",
		`prometheus.io/scrape: "true"`, "replicas: 2"} {
		if !strings.Contains(m.text, want) {
			t.Errorf("%s lacks %q", manifestFile, want)
		}
	}
}
