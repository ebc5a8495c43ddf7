package deploytest

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v2"
)

// k8sObject is the part of the manifest's objects the hardening tests read.
type k8sObject struct {
	Kind     string                `yaml:"kind"`
	Metadata struct{ Name string } `yaml:"metadata"`
	Data     map[string]string     `yaml:"data"`
	Spec     struct {
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		PodSelector selector     `yaml:"podSelector"`
		PolicyTypes []string     `yaml:"policyTypes"`
		Ingress     []policyRule `yaml:"ingress"`
		Egress      []policyRule `yaml:"egress"`
	} `yaml:"spec"`
}

type podSpec struct {
	SecurityContext struct {
		RunAsGroup *int64 `yaml:"runAsGroup"`
		FSGroup    *int64 `yaml:"fsGroup"`
	} `yaml:"securityContext"`
	Containers []struct {
		Name      string `yaml:"name"`
		Image     string `yaml:"image"`
		Env       []any  `yaml:"env"`
		EnvFrom   []any  `yaml:"envFrom"`
		Resources struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
	} `yaml:"containers"`
	Volumes []struct {
		Name   string `yaml:"name"`
		Secret *struct {
			SecretName  string `yaml:"secretName"`
			DefaultMode *int   `yaml:"defaultMode"`
		} `yaml:"secret"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
	} `yaml:"volumes"`
}

type selector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type policyRule struct {
	From  []policyPeer `yaml:"from"`
	To    []policyPeer `yaml:"to"`
	Ports []struct {
		Protocol string `yaml:"protocol"`
		Port     int    `yaml:"port"`
	} `yaml:"ports"`
}

type policyPeer struct {
	NamespaceSelector *selector `yaml:"namespaceSelector"`
	PodSelector       *selector `yaml:"podSelector"`
	IPBlock           *struct {
		CIDR string `yaml:"cidr"`
	} `yaml:"ipBlock"`
}

// k8s is the manifest decoded: its objects by kind, the Deployment's pod,
// and the ConfigMap's connector config.
type k8s struct {
	objects   map[string]k8sObject
	pod       podSpec
	podLabels map[string]string
	config    map[string]string
}

func readK8s(t *testing.T) k8s {
	t.Helper()
	f, err := os.Open(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := k8s{objects: map[string]k8sObject{}}
	dec := yaml.NewDecoder(f)
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", manifestFile, err)
		}
		if _, dup := m.objects[o.Kind]; dup {
			t.Fatalf("%s: two objects of kind %s; the tests read one of each", manifestFile, o.Kind)
		}
		m.objects[o.Kind] = o
	}
	for _, kind := range []string{"ConfigMap", "Deployment", "NetworkPolicy"} {
		if _, ok := m.objects[kind]; !ok {
			t.Fatalf("%s: no %s", manifestFile, kind)
		}
	}
	d := m.objects["Deployment"]
	m.pod, m.podLabels = d.Spec.Template.Spec, d.Spec.Template.Metadata.Labels
	if len(m.pod.Containers) != 1 {
		t.Fatalf("%s: %d containers, want the relay's one", manifestFile, len(m.pod.Containers))
	}
	var connector struct{ Config map[string]string }
	if err := json.Unmarshal([]byte(m.objects["ConfigMap"].Data["connector.json"]), &connector); err != nil {
		t.Fatalf("%s: connector.json: %v", manifestFile, err)
	}
	m.config = connector.Config
	return m
}

// volumeOf returns the volume a path of the container is mounted from and
// whether the mount is read-only; "" when no mount holds the path.
func (m k8s) volumeOf(path string) (name string, readOnly bool) {
	for _, vm := range m.pod.Containers[0].VolumeMounts {
		if strings.HasPrefix(path, strings.TrimSuffix(vm.MountPath, "/")+"/") {
			return vm.Name, vm.ReadOnly
		}
	}
	return "", false
}

// fromSecret: path is in a read-only mount of a Secret volume.
func (m k8s) fromSecret(path string) bool {
	name, ro := m.volumeOf(path)
	for _, v := range m.pod.Volumes {
		if v.Name == name && name != "" {
			return ro && v.Secret != nil
		}
	}
	return false
}

// fromConfigMap: path is in a read-only mount of a ConfigMap volume other
// than the connector's.
func (m k8s) fromConfigMap(path string) bool {
	name, ro := m.volumeOf(path)
	for _, v := range m.pod.Volumes {
		if v.Name == name && name != "" {
			return ro && v.ConfigMap != nil && v.ConfigMap.Name != m.objects["ConfigMap"].Metadata.Name
		}
	}
	return false
}

// fileRef matches a whole ${file:path:key} reference.
var fileRef = regexp.MustCompile(`^\$\{file:(/[^:}]+):[^}]+\}$`)

// Regression (issue 27, item 9): the example sent the database password to
// any server with any certificate (sslmode=require) and used plaintext,
// unauthenticated Kafka. It verifies PostgreSQL's certificate and host name
// against a CA mounted from a ConfigMap, and speaks SASL_SSL with SCRAM to
// the brokers, checking their certificates against a mounted CA too.
func TestManifestVerifiesPeers(t *testing.T) {
	m := readK8s(t)
	c := m.config
	if c["database.sslmode"] != "verify-full" {
		t.Errorf("database.sslmode %q; want verify-full", c["database.sslmode"])
	}
	if p := c["database.sslrootcert"]; !m.fromConfigMap(p) {
		t.Errorf("database.sslrootcert %q is not in a read-only mount of a CA ConfigMap", p)
	}
	if c["security.protocol"] != "SASL_SSL" || !strings.HasPrefix(c["sasl.mechanism"], "SCRAM-SHA-") {
		t.Errorf("security.protocol %q, sasl.mechanism %q; want SASL_SSL with SCRAM-SHA-256 or -512", c["security.protocol"], c["sasl.mechanism"])
	}
	if !strings.Contains(c["sasl.jaas.config"], "ScramLoginModule required") {
		t.Errorf("sasl.jaas.config %q: want the ScramLoginModule", c["sasl.jaas.config"])
	}
	if p := c["ssl.truststore.location"]; !m.fromConfigMap(p) {
		t.Errorf("ssl.truststore.location %q is not in a read-only mount of a CA ConfigMap", p)
	}
	if v, set := c["ssl.endpoint.identification.algorithm"]; set && v != "https" {
		t.Errorf("ssl.endpoint.identification.algorithm %q: the brokers' host names must be checked", v)
	}
}

// Regression (issue 27, item 9): the database password came from an
// environment variable (visible in the pod spec's env, to kubectl describe
// and to every process of the container). Both passwords are read with
// ${file:} from a properties file in a read-only Secret mount that the
// pod's group may read, and no environment variable comes from a Secret.
func TestManifestSecretsFromFiles(t *testing.T) {
	m := readK8s(t)
	jaasPassword := regexp.MustCompile(`password="([^"]*)"`).FindStringSubmatch(m.config["sasl.jaas.config"])
	if jaasPassword == nil {
		t.Fatalf("sasl.jaas.config %q has no password", m.config["sasl.jaas.config"])
	}
	for what, v := range map[string]string{"database.password": m.config["database.password"], "sasl.jaas.config's password": jaasPassword[1]} {
		ref := fileRef.FindStringSubmatch(v)
		if ref == nil || !m.fromSecret(ref[1]) {
			t.Errorf("%s is %q; want ${file:path:key} with path in a read-only Secret mount", what, v)
		}
	}
	c := m.pod.Containers[0]
	if len(c.Env) > 0 || len(c.EnvFrom) > 0 {
		t.Errorf("the container has env %v, envFrom %v; secrets come from files", c.Env, c.EnvFrom)
	}
	for _, v := range m.pod.Volumes {
		if v.Secret == nil {
			continue
		}
		sc := m.pod.SecurityContext
		if v.Secret.DefaultMode == nil || *v.Secret.DefaultMode != 0o440 || sc.FSGroup == nil || sc.RunAsGroup == nil || *sc.FSGroup != *sc.RunAsGroup {
			t.Errorf("secret volume %s: want defaultMode 0440 and fsGroup equal to runAsGroup, so that the relay's user reads it and nobody else", v.Name)
		}
	}
}

// Regression (issue 27, item 9): the example had no NetworkPolicy: anyone
// in the cluster could reach the HTTP server, and the relay could reach
// anything. The policy selects the relay's pods, allows in only the
// monitoring namespace on the HTTP port, and out only PostgreSQL's port,
// the brokers' port and DNS, each rule naming its peers.
func TestManifestNetworkPolicy(t *testing.T) {
	m := readK8s(t)
	np := m.objects["NetworkPolicy"].Spec
	for k, v := range np.PodSelector.MatchLabels {
		if m.podLabels[k] != v {
			t.Errorf("podSelector %v does not select the Deployment's pods %v", np.PodSelector.MatchLabels, m.podLabels)
		}
	}
	if len(np.PodSelector.MatchLabels) == 0 || !slices.Contains(np.PolicyTypes, "Ingress") || !slices.Contains(np.PolicyTypes, "Egress") {
		t.Errorf("podSelector %v, policyTypes %v; want the relay's pods, Ingress and Egress", np.PodSelector.MatchLabels, np.PolicyTypes)
	}
	httpPort, err := strconv.Atoi(readManifest(t).container)
	if err != nil {
		t.Fatal(err)
	}
	if len(np.Ingress) != 1 || len(np.Ingress[0].From) != 1 || np.Ingress[0].From[0].NamespaceSelector == nil ||
		np.Ingress[0].From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" ||
		len(np.Ingress[0].Ports) != 1 || np.Ingress[0].Ports[0].Port != httpPort || np.Ingress[0].Ports[0].Protocol != "TCP" {
		t.Errorf("ingress %+v; want one rule: from the monitoring namespace, to TCP port %d", np.Ingress, httpPort)
	}
	_, kafkaPort, err := net.SplitHostPort(strings.Split(m.config["bootstrap.servers"], ",")[0])
	if err != nil {
		t.Fatalf("bootstrap.servers: %v", err)
	}
	want := []string{"TCP/" + m.config["database.port"], "TCP/" + kafkaPort, "TCP/53", "UDP/53"}
	var got []string
	for i, r := range np.Egress {
		if len(r.To) == 0 || len(r.Ports) == 0 {
			t.Errorf("egress rule %d: to %v, ports %v; a rule without peers or ports allows every peer or port", i, r.To, r.Ports)
		}
		for _, p := range r.Ports {
			got = append(got, p.Protocol+"/"+strconv.Itoa(p.Port))
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("egress ports %v; want exactly %v (database.port, bootstrap.servers' port, DNS)", got, want)
	}
}

// Regression (issue 27, item 9): the example ran :latest, whatever the
// registry serves that day. The image is a release tag pinned by digest
// (sha256:DIGEST until set, which the comment above it explains, and which
// fails the pull rather than run an unchecked image), with CPU, memory and
// ephemeral storage limited.
func TestManifestPinnedAndLimited(t *testing.T) {
	m := readK8s(t)
	c := m.pod.Containers[0]
	if !regexp.MustCompile(`^ghcr\.io/outboxrelay/outboxrelay:v\d+\.\d+\.\d+@sha256:(DIGEST|[0-9a-f]{64})$`).MatchString(c.Image) {
		t.Errorf("image %q; want a release tag and its digest (repo:vX.Y.Z@sha256:…)", c.Image)
	}
	if strings.Contains(c.Image, "@sha256:DIGEST") && !strings.Contains(readManifest(t).text, "imagetools inspect") {
		t.Errorf("image %q has the digest placeholder and no comment saying how to get the digest", c.Image)
	}
	for _, r := range []string{"cpu", "memory"} {
		if c.Resources.Requests[r] == "" {
			t.Errorf("resources.requests.%s unset", r)
		}
	}
	for _, r := range []string{"cpu", "memory", "ephemeral-storage"} {
		if c.Resources.Limits[r] == "" {
			t.Errorf("resources.limits.%s unset", r)
		}
	}
}

// Regression (issue 27, item 9): with sql/role.sql creating the role
// without a password, the compose demo gives it its password in a file of
// its own, marked as a demo's, run after role.sql at the database's first
// start; the relay's OUTBOXRELAY_DB_PASSWORD is that password.
func TestComposeDemoPassword(t *testing.T) {
	compose, err := os.ReadFile("../../deploy/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	demo, err := os.ReadFile("../../deploy/demo-role-password.sql")
	if err != nil {
		t.Fatal(err)
	}
	role := regexp.MustCompile(`\.\./sql/role\.sql:/docker-entrypoint-initdb\.d/(\S+):ro`).FindSubmatch(compose)
	pass := regexp.MustCompile(`\./demo-role-password\.sql:/docker-entrypoint-initdb\.d/(\S+):ro`).FindSubmatch(compose)
	if role == nil || pass == nil || string(role[1]) >= string(pass[1]) {
		t.Fatalf("docker-compose.yml: want sql/role.sql, then demo-role-password.sql, in /docker-entrypoint-initdb.d")
	}
	set := regexp.MustCompile(`(?m)^ALTER ROLE debezium PASSWORD '([^']+)';$`).FindSubmatch(demo)
	env := regexp.MustCompile(`OUTBOXRELAY_DB_PASSWORD: "([^"]+)" # DEMO ONLY`).FindSubmatch(compose)
	if set == nil || env == nil || string(set[1]) != string(env[1]) {
		t.Errorf("demo-role-password.sql sets %q, compose gives the relay %q (marked DEMO ONLY); want one password", set, env)
	}
	if !strings.HasPrefix(string(demo), "-- DEMO ONLY") {
		t.Errorf("demo-role-password.sql does not start by saying it is for the demo only")
	}
}
