package deploytest

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// dashboard is the part of Grafana's dashboard JSON model the tests read.
type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int                `json:"id"`
		Title      string             `json:"title"`
		Datasource json.RawMessage    `json:"datasource"`
		GridPos    struct{ W, H int } `json:"gridPos"`
		Targets    []struct {
			RefID      string          `json:"refId"`
			Expr       string          `json:"expr"`
			Datasource json.RawMessage `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// panelQuery is one dashboard target's expression with the variables
// replaced as Grafana sends them.
type panelQuery struct{ where, expr string }

// grafanaVars are the values the live test gives the dashboard's
// variables: job and instance as its Prometheus labels them (instance
// "All": the variable's allValue), the rate interval Grafana computes
// for a 1 s scrape interval.
var grafanaVars = strings.NewReplacer("$job", "outboxrelay", "$instance", ".+", "$__rate_interval", "1m")

func dashboardQueries(t *testing.T) []panelQuery {
	t.Helper()
	var out []panelQuery
	for _, p := range readDashboard(t).Panels {
		for _, tg := range p.Targets {
			out = append(out, panelQuery{fmt.Sprintf("panel %q target %s", p.Title, tg.RefID), grafanaVars.Replace(tg.Expr)})
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no queries", dashboardFile)
	}
	return out
}

// TestDashboardModel: the dashboard imports into any Grafana with a
// Prometheus data source: the data source is a variable that every panel
// and target uses, ids are unique, every panel has a size and a query,
// and each of the subjects has its panel.
func TestDashboardModel(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: both must be set for an import", d.UID, d.Title)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" {
		t.Errorf("templating: want a variable datasource of type datasource, have %v", vars)
	}
	const ds = `{"type":"prometheus","uid":"${datasource}"}`
	ids := map[int]bool{}
	titles := map[string]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID], titles[p.Title] = true, true
		if compact(p.Datasource) != ds {
			t.Errorf("panel %q: datasource %s, want %s", p.Title, p.Datasource, ds)
		}
		if p.GridPos.W == 0 || p.GridPos.H == 0 || len(p.Targets) == 0 {
			t.Errorf("panel %q: gridPos %+v and %d targets; want a size and a query", p.Title, p.GridPos, len(p.Targets))
		}
		for _, tg := range p.Targets {
			if compact(tg.Datasource) != ds || tg.Expr == "" {
				t.Errorf("panel %q target %s: datasource %s, expr %q", p.Title, tg.RefID, tg.Datasource, tg.Expr)
			}
		}
	}
	for _, want := range []string{"Throughput per topic", "Replication lag (bytes)", "Replication lag (seconds)", "Commit-to-ack latency",
		"In flight", "Errors", "State", "Ready", "Snapshot progress"} {
		if !titles[want] {
			t.Errorf("no panel %q", want)
		}
	}
}

func compact(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
